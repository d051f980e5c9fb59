#!/usr/bin/env bash
# On the GPU machine: reads for training loops (issue 20): region reads, routes and their calibration, the chunk
# cache on device reads, conversion kernels (NVRTC), prefetch and the PyTorch dataset. Logs go to $OUT.
#   STEPS=tests  the device path's unit tests (ctest), test_read_regions and test_gpu_convert under
#                compute-sanitizer, the Python tests of read_batch, the cache, prefetch, zgpu.torch and fork
#   STEPS=bench  bench/bench_train.py (its arguments after --)
#   STEPS=all    both
#   STEPS=build  the build alone (then run what you need with $B/lib/libzgpu.so: bench/bench_fixed_cost.py ...)
# The route model and the kernel cache live in /tmp/zgpu-cache (ZGPU_CACHE_DIR; the tests' in /tmp/zgpu-cache-tests):
# a warm machine keeps them, and the route model is copied to $OUT. REUSE=1 keeps this machine's build.
# Carry: [".gpudeps", ".nvcomp", ".whl", "shared"] (scripts/gpu/prepare-carry.sh); torch and cupy are the machine's.
set -o pipefail
R=$PWD D=$PWD/.gpudeps B=${B:-/tmp/zgpu-build} OUT=${OUT:-/tmp/zgpu-out} STEPS=${STEPS:-all}
mkdir -p "$OUT"
export ZGPU_NVCOMP_LIB=$R/.nvcomp LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export ZGPU_CACHE_DIR=/tmp/zgpu-cache-tests  # (the tests run side by side: the benchmark measures its own model)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site ${WHL:-.whl}/*.whl
export PYTHONPATH=/tmp/site:$R/python
nvidia-smi -L
if [ "${REUSE:-0}" != 1 ] || [ ! -f $B/lib/libzgpu.so ]; then
    rm -rf $B
    t0=$(date +%s)
    cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON -DZGPU_CUDA_ARCHS=native -DCMAKE_PREFIX_PATH=$D/usr \
        -DCMAKE_INCLUDE_PATH=$D/usr/include -DCMAKE_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu;$D/lib/x86_64-linux-gnu" \
        > $OUT/cmake.log 2>&1 || { tail -30 $OUT/cmake.log; exit 1; }
    cmake --build $B -j16 > $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -30; exit 1; }
    echo "built in $(( $(date +%s) - t0 )) s"
fi
export ZGPU_LIB=$B/lib/libzgpu.so ZGPU_CLI=$B/bin/zgpu
[ "$STEPS" = build ] && exit 0
if [ "$STEPS" != bench ]; then
    (cd $B && timeout 420 ctest -j8 --output-on-failure -E "hostile|blosc_parse|roundtrip" > $OUT/ctest.log 2>&1;
     echo "ctest rc=$?"; grep -E "tests passed|\*\*\*Failed|Skipped|Timeout" $OUT/ctest.log | head -20)
    for t in test_read_regions test_gpu_convert test_gpu_cache test_route test_jit_cache; do
        [ -x $B/bin/$t ] || continue
        (cd $B && timeout 240 ./bin/$t > $OUT/$t.log 2>&1; echo "$t rc=$? $(tail -1 $OUT/$t.log)"; grep -iE "cold|warm|hot" $OUT/$t.log | head -5)
    done
    ls $ZGPU_CACHE_DIR 2>/dev/null && cp $ZGPU_CACHE_DIR/route-*.txt $OUT/ 2>/dev/null
    for t in test_read_regions test_gpu_convert test_gpu_cache; do
        [ -x $B/bin/$t ] || continue
        (cd $B && ZGPU_TEST_QUICK=1 timeout 200 compute-sanitizer --tool memcheck --leak-check no --kernel-name-exclude kns=nvcomp \
            ./bin/$t > $OUT/san_$t.log 2>&1; echo "memcheck $t rc=$? $(grep 'ERROR SUMMARY' $OUT/san_$t.log)")
    done
    timeout 400 python3 -m pytest -q -p no:cacheprovider -rfEs python/tests/test_read_batch.py python/tests/test_chunk_cache.py \
        python/tests/test_prefetch.py python/tests/test_torch_dataset.py python/tests/test_fork.py python/tests/test_torch_out.py \
        python/tests/test_gpu.py > $OUT/pytest.log 2>&1
    echo "python rc=$? $(tail -1 $OUT/pytest.log)"; grep -E "^FAILED|^ERROR" $OUT/pytest.log | head -20
fi
[ "$STEPS" = tests ] && exit 0
[ "${1:-}" = -- ] && shift
export ZGPU_CACHE_DIR=/tmp/zgpu-cache  # the route model measured on a quiet machine, by the benchmark's first read
PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-560} python3 bench/bench_train.py --lib $B/lib/libzgpu.so \
    --json $OUT/train.json "$@" 2>&1 | tee $OUT/bench-train.log | grep -vE "^\s*$" | tail -80
cp $ZGPU_CACHE_DIR/route-*.txt $OUT/ 2>/dev/null; true
