#!/usr/bin/env bash
# On the GPU machine: build test_gpu_zstd, run its cases, then time the decoder's kernels (ZGPU_PROFILE) on
# batches of $COPIES (64; a list: 1,8,64) copies of one chunk of each benchmark volume (tuning aid; needs only
# .gpudeps and shared/ carried). SAMPLES_ONLY=1 skips the test's cases; SANITIZE=1 adds compute-sanitizer runs;
# BLOCK_TIMES=1 prints when each K3b block of a one-frame batch ended (us after the kernel's start).
set -o pipefail
D=$PWD/.gpudeps B=/tmp/zgpu-build OUT=${OUT:-/tmp/zgpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON ${BLOCK_TIMES:+-DCMAKE_CUDA_FLAGS=-DZG_ZD_BLOCK_TIMES} -DCMAKE_PREFIX_PATH=$D/usr -DCMAKE_INCLUDE_PATH=$D/usr/include \
    -DCMAKE_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu;$D/lib/x86_64-linux-gnu" > $OUT/cmake.log 2>&1 || { tail -30 $OUT/cmake.log; exit 1; }
cmake --build $B -j16 --target test_gpu_zstd > $OUT/build.log 2>&1 || { grep error $OUT/build.log | head; exit 1; }
python3 - <<'PY'
import sys; sys.path.insert(0, "shared/bench")
import datasets
for n in ["oct_u16", "field_f32", "labels_u32"]:
    datasets.make(n, planes=64)[:, 256:512, 256:512].copy().tofile(f"/tmp/{n}.raw")
PY
cd $B
[ -z "$SAMPLES_ONLY" ] && { ./bin/test_gpu_zstd > $OUT/zstd.log 2>&1; echo "zstd rc=$? $(tail -1 $OUT/zstd.log)"; grep -E "speed|damaged|valid|FAIL|failed" $OUT/zstd.log | head -20; }
# SANITIZE=1: the quick cases under compute-sanitizer's memcheck and racecheck (K3b's window in shared memory)
if [ -n "$SANITIZE" ]; then
    for tool in memcheck racecheck; do
        ZGPU_TEST_QUICK=1 timeout 240 compute-sanitizer --tool $tool ./bin/test_gpu_zstd > $OUT/san-$tool.log 2>&1
        echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san-$tool.log | tail -1) $(tail -1 $OUT/san-$tool.log)"
    done
fi
ZGPU_PROFILE=1 ZGPU_ZSTD_SAMPLE_ONLY=1 ZGPU_ZSTD_SAMPLE_COPIES=${COPIES:-64} ZGPU_ZSTD_SAMPLE=/tmp/oct_u16.raw:/tmp/field_f32.raw:/tmp/labels_u32.raw \
    ./bin/test_gpu_zstd 2>&1 | awk '/zstd decoder/ { if (++n % 5 == 0) print; next } { print }'
