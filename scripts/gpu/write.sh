#!/usr/bin/env bash
# On the GPU machine: device writes (issue 24), in one call. Builds the library (CUDA) into $B (default
# /tmp/zgpu-build), runs test_gpu_write with its trace (which chains the GPU encodes: docs/gpu-writes.md),
# test_gpu_write_faults, test_gpu_blosc_encode (quick), python/tests/test_gpu.py -k write (zarr-python reads the
# device-written arrays back), tests/cli/test_cli_gpu.sh (cp --device), then the benchmark bench/bench_write_gpu.py
# with $BENCH's arguments (default: 128-plane volumes, no zarr-python, docs untouched; BENCH="--repeat 3
# --recompress" for the docs' table). MEMCHECK=1: test_gpu_write under compute-sanitizer; ALL=1: test_gpu_encode and
# test_gpu_read too; BENCH=none: no benchmark.
# Carry [".gpudeps", ".nvcomp", ".whl-py"] (.whl-py: zarr-python and its wheels, prepare-carry.sh's .whl without
# tensorstore, which the machine has), from a snapshot of the commit under test (others' work in the tree).
set -o pipefail
R=$PWD D=$PWD/.gpudeps B=${B:-/tmp/zgpu-build} OUT=${OUT:-/tmp/zgpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-} ZGPU_NVCOMP_LIB=$R/.nvcomp
t0=$(date +%s)
TARGETS="zgpu zgpu_cli test_gpu_write test_gpu_write_faults test_gpu_blosc_encode"
[ "${ALL:-0}" = 1 ] && TARGETS="$TARGETS test_gpu_encode test_gpu_read"
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON -DZGPU_CUDA_ARCHS=native -DCMAKE_PREFIX_PATH=$D/usr \
    -DCMAKE_INCLUDE_PATH=$D/usr/include -DCMAKE_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu;$D/lib/x86_64-linux-gnu" > $OUT/cmake.log 2>&1 || { tail -20 $OUT/cmake.log; exit 1; }
# shellcheck disable=SC2086
cmake --build $B -j16 --target $TARGETS > $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -30; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
cd $B
ZGPU_TRACE=1 timeout 90 ./bin/test_gpu_write > $OUT/write.log 2>&1; echo "test_gpu_write rc=$? $(tail -1 $OUT/write.log)"
grep -m12 "CHECK failed" $OUT/write.log
grep "device write" $OUT/write.log | sed 's/of [0-9]* chunks in waves of [0-9]*//' | sort | uniq -c
timeout 90 ./bin/test_gpu_write_faults > $OUT/faults.log 2>&1; echo "test_gpu_write_faults rc=$? $(tail -1 $OUT/faults.log)"
ZGPU_TEST_QUICK=1 timeout 90 ./bin/test_gpu_blosc_encode > $OUT/blosc.log 2>&1; echo "test_gpu_blosc_encode (quick) rc=$? $(tail -1 $OUT/blosc.log)"
if [ "${MEMCHECK:-0}" = 1 ]; then
    timeout 300 compute-sanitizer --tool memcheck --leak-check no ./bin/test_gpu_write > $OUT/san_write.log 2>&1; echo "memcheck write rc=$? $(grep 'ERROR SUMMARY' $OUT/san_write.log)"; grep -m3 -A8 "Invalid" $OUT/san_write.log | head -30
fi
if [ "${ALL:-0}" = 1 ]; then
    timeout 200 ./bin/test_gpu_encode > $OUT/encode.log 2>&1; echo "test_gpu_encode rc=$? $(tail -1 $OUT/encode.log)"
    timeout 200 ./bin/test_gpu_read > $OUT/read.log 2>&1; echo "test_gpu_read rc=$? $(tail -1 $OUT/read.log)"
fi
cd $R
mkdir -p /tmp/site && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl-py/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$R/python ZGPU_LIB=$B/lib/libzgpu.so
timeout 150 python3 -m pytest -q -p no:cacheprovider python/tests/test_gpu.py -k "write" 2>&1 | tail -3
timeout 300 bash tests/cli/test_cli_gpu.sh $B/bin/zgpu > $OUT/cli_gpu.log 2>&1; echo "test_cli_gpu.sh (read and cp --device) rc=$? $(tail -1 $OUT/cli_gpu.log)"; grep -E -m12 "FAIL|skipped" $OUT/cli_gpu.log
if [ "${BENCH:-}" != none ]; then
    # shellcheck disable=SC2086
    timeout 420 python3 bench/bench_write_gpu.py --lib $B/lib/libzgpu.so --bin $B/bin/zgpu --dir /dev/shm/zgpu-bw \
        ${BENCH:---planes 128 --repeat 2 --no-zarr-python} > $OUT/bench.log 2>&1; echo "bench rc=$?"
    grep -E "GB/s|cells|recompress" $OUT/bench.log | grep -v "^|"
    cp docs/benchmarks.md $OUT/ 2>/dev/null
fi
