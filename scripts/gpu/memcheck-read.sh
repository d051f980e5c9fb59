#!/usr/bin/env bash
# On the GPU machine: compute-sanitizer memcheck over the WHOLE test_gpu_read suite (every array, region,
# layout, wave and corruption case), split into N shards run in parallel (memcheck is ~100x slower than a
# plain run). zgpu's own zstd decoder is forced so that its kernels are checked too; nvCOMP's kernels are
# not instrumented (not ours). Usage: [SHARDS=8] [ONLY="0 1"] [LIMIT=400] bash scripts/gpu/memcheck-read.sh
# (2026-11-22 on an H100: 8 shards in parallel had not finished after 330 s; run a few shards per call with
# ONLY, within the 10-minute limit of a call)
set -o pipefail
R=$PWD D=$PWD/.gpudeps B=/tmp/zgpu-build-memcheck SHARDS=${SHARDS:-8} LIMIT=${LIMIT:-400}
export ZGPU_NVCOMP_LIB=$R/.nvcomp LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON -DCMAKE_PREFIX_PATH=$D/usr \
    -DCMAKE_INCLUDE_PATH=$D/usr/include -DCMAKE_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu;$D/lib/x86_64-linux-gnu" \
    > /tmp/memcheck-cmake.log 2>&1 || { tail -20 /tmp/memcheck-cmake.log; exit 1; }
cmake --build $B -j16 --target test_gpu_read > /tmp/memcheck-build.log 2>&1 || { grep error /tmp/memcheck-build.log | head; exit 1; }
for k in ${ONLY:-$(seq 0 $((SHARDS - 1)))}; do
    (cd $B && ZGPU_ZSTD_DECODER=zgpu ZGPU_TEST_SHARD=$k/$SHARDS timeout $LIMIT compute-sanitizer --tool memcheck \
        --leak-check no --kernel-name-exclude kns=nvcomp ./bin/test_gpu_read > /tmp/memcheck-$k.log 2>&1;
     echo "shard $k/$SHARDS rc=$? $(grep 'ERROR SUMMARY' /tmp/memcheck-$k.log) $(grep -E 'passed|failed' /tmp/memcheck-$k.log | tail -1)") &
done
wait
