#!/usr/bin/env bash
# On the GPU machine (after scripts/gpu/prepare-carry.sh here): build with CUDA, run the GPU tests (C, CLI,
# Python) with compute-sanitizer memcheck on the kernel tests, then the GPU benchmark. Logs go to $OUT.
# Usage: [STEPS=tests|bench|all] bash scripts/gpu/run.sh [bench_gpu.py args, e.g. --planes 64 --no-docs | --docs]
# (one device command may run 10 minutes: the tests and the full-size benchmark fit one each)
set -o pipefail
R=$PWD D=$PWD/.gpudeps B=/tmp/zgpu-build OUT=${OUT:-/tmp/zgpu-out}
mkdir -p "$OUT"
export ZGPU_NVCOMP_LIB=$R/.nvcomp LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && \
    export PYTHONPATH=/tmp/site
nvidia-smi -L
rm -rf $B   # a warm machine keeps /tmp: never reuse a cache configured from other carried files
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON -DCMAKE_PREFIX_PATH=$D/usr \
    -DCMAKE_INCLUDE_PATH=$D/usr/include -DCMAKE_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu;$D/lib/x86_64-linux-gnu" \
    > $OUT/cmake.log 2>&1 || { tail -30 $OUT/cmake.log; exit 1; }
cmake --build $B -j16 > $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -30; exit 1; }
STEPS=${STEPS:-all}
if [ "$STEPS" != bench ]; then
(cd $B && ctest -j8 --output-on-failure > $OUT/ctest.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|Failed|Skipped" $OUT/ctest.log)
(cd $B && ./bin/test_gpu_kernels > $OUT/kern.log 2>&1; echo "kernels rc=$? $(tail -1 $OUT/kern.log)")
(cd $B && ./bin/test_gpu_zstd > $OUT/zstd.log 2>&1; echo "zstd rc=$? $(tail -1 $OUT/zstd.log)"; grep -E "speed|damaged|valid" $OUT/zstd.log)
(cd $B && ./bin/test_gpu_inflate > $OUT/inflate.log 2>&1; echo "inflate rc=$? $(tail -1 $OUT/inflate.log)"; grep -E "throughput|damaged|valid" $OUT/inflate.log)
(cd $B && timeout 300 ./bin/test_gpu_read > $OUT/read.log 2>&1; echo "read rc=$? $(tail -1 $OUT/read.log)")
(cd $B && ZGPU_ZSTD_DECODER=zgpu timeout 300 ./bin/test_gpu_read > $OUT/read_zgpu.log 2>&1; echo "read (zgpu zstd) rc=$? $(tail -1 $OUT/read_zgpu.log)")
(cd $B && timeout 120 compute-sanitizer --tool memcheck --leak-check no ./bin/test_gpu_kernels > $OUT/san_kern.log 2>&1;
 echo "memcheck kernels rc=$? $(grep 'ERROR SUMMARY' $OUT/san_kern.log)")
(cd $B && ZGPU_TEST_QUICK=1 timeout 150 compute-sanitizer --tool memcheck --leak-check no ./bin/test_gpu_zstd > $OUT/san_zstd.log 2>&1;
 echo "memcheck zstd rc=$? $(grep 'ERROR SUMMARY' $OUT/san_zstd.log)")
(cd $B && ZGPU_TEST_QUICK=1 timeout 150 compute-sanitizer --tool memcheck --leak-check no ./bin/test_gpu_inflate > $OUT/san_inflate.log 2>&1;
 echo "memcheck inflate rc=$? $(grep 'ERROR SUMMARY' $OUT/san_inflate.log)")
(cd $B && ZGPU_ZSTD_DECODER=zgpu ZGPU_TEST_QUICK=1 timeout ${MEMCHECK_READ_TIMEOUT:-240} compute-sanitizer --tool memcheck --leak-check no --kernel-name-exclude kns=nvcomp ./bin/test_gpu_read > $OUT/san_read.log 2>&1;
 echo "memcheck read rc=$? $(grep 'ERROR SUMMARY' $OUT/san_read.log)")
ZGPU_LIB=$B/lib/libzgpu.so PYTHONPATH=$R/python:${PYTHONPATH:-} python3 -m pytest -q -p no:cacheprovider python/tests -k gpu \
    > $OUT/pytest_gpu.log 2>&1; echo "python gpu rc=$? $(tail -1 $OUT/pytest_gpu.log)"
fi
[ "$STEPS" = tests ] && exit 0
PYTHONUNBUFFERED=1 python3 bench/bench_gpu.py --lib $B/lib/libzgpu.so --data /tmp/zgpu-bench-data --json $OUT/bench.json "$@" \
    2>&1 | tee $OUT/bench.log | grep -E "zgpu|error|Error" | tail -14
cp docs/benchmarks.md $OUT/ 2>/dev/null; true
