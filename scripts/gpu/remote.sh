#!/usr/bin/env bash
# On the GPU machine: remote stores (HTTP, S3) into GPU memory. Builds the library, the CLI and the range server,
# runs the remote suite (tests/remote: host reads and writes against the test HTTP server and moto's S3 server,
# and the device reads of test_remote_gpu.py), a device read under compute-sanitizer memcheck, and the remote
# benchmark (bench/bench_remote.py; its arguments after --). Logs go to $OUT.
# Carry: [".gpudeps", ".whl-remote", "shared"] plus the work tree (scripts/gpu/prepare-carry.sh makes them);
# tensorstore, cupy, numpy and pytest are the machine's own, libcurl and libcrypto too.
# Usage: [STEPS=tests|bench|all] [REUSE=1] bash scripts/gpu/remote.sh [-- bench_remote.py args]
set -o pipefail
R=$PWD D=$PWD/.gpudeps B=${B:-/tmp/zgpu-build-remote} OUT=${OUT:-/tmp/zgpu-out} STEPS=${STEPS:-all}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
[ -d .whl-remote ] && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site-remote .whl-remote/*.whl
export PYTHONPATH=/tmp/site-remote:$R/python
nvidia-smi -L
if [ "${REUSE:-0}" != 1 ] || [ ! -f $B/lib/libzgpu.so ]; then
    rm -rf $B
    cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON -DZGPU_CUDA_ARCHS=native -DCMAKE_PREFIX_PATH=$D/usr \
        -DCMAKE_INCLUDE_PATH=$D/usr/include -DCMAKE_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu;$D/lib/x86_64-linux-gnu" \
        > $OUT/cmake.log 2>&1 || { tail -30 $OUT/cmake.log; exit 1; }
    cmake --build $B -j16 --target zgpu zgpu_cli zgpu_range_server test_http_client test_url > $OUT/build.log 2>&1 ||
        { grep -E "error" $OUT/build.log | head -30; exit 1; }
fi
export ZGPU_LIB=$B/lib/libzgpu.so ZGPU_CLI=$B/bin/zgpu
python3 -c "import zgpu, cupy, zarr, moto; print('zgpu', zgpu.library_path(), 'gpu', zgpu.gpu_available(), 'cupy', cupy.__version__, 'zarr', zarr.__version__, 'moto', moto.__version__)"
if [ "$STEPS" != bench ]; then
    (cd $B && ./bin/test_url > $OUT/test_url.log 2>&1; echo "test_url rc=$? $(tail -1 $OUT/test_url.log)")
    (cd $B && ./bin/test_http_client > $OUT/test_http_client.log 2>&1; echo "test_http_client rc=$? $(tail -1 $OUT/test_http_client.log)")
    t0=$(date +%s)
    timeout 400 python3 -m pytest -q -p no:cacheprovider tests/remote -rfEs > $OUT/remote.log 2>&1
    echo "tests/remote rc=$? in $(( $(date +%s) - t0 )) s: $(tail -1 $OUT/remote.log)"
    grep -E "^FAILED|^ERROR|^SKIPPED" $OUT/remote.log | head -30
    # the device path's remote fetch (per-wave batches into pinned staging) under memcheck
    timeout 300 compute-sanitizer --tool memcheck --leak-check no --target-processes all \
        python3 -m pytest -q -p no:cacheprovider tests/remote/test_remote_gpu.py -k "sharded or http and v3-zstd" \
        > $OUT/remote-memcheck.log 2>&1
    echo "memcheck remote gpu rc=$? $(grep -c 'ERROR SUMMARY: 0 errors' $OUT/remote-memcheck.log) clean process(es), $(grep 'ERROR SUMMARY' $OUT/remote-memcheck.log | grep -vc ' 0 errors') with errors; $(tail -1 $OUT/remote-memcheck.log)"
fi
[ "$STEPS" = tests ] && exit 0
[ "${1:-}" = -- ] && shift
PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-560} python3 bench/bench_remote.py --lib $B/lib/libzgpu.so \
    --json $OUT/remote.json "$@" 2>&1 | tee $OUT/bench-remote.log | grep -vE "^\s*$" | tail -60
cp docs/benchmarks.md $OUT/ 2>/dev/null; true
