#!/usr/bin/env bash
# On the GPU machine: literal frames decoded sparse (zstd_split.c: a plane of an OCT or field chunk decodes the blocks
# it reads), the working tree's build against a baseline source tree carried in .baseline/ (made as split.sh says).
#   (TAG names the JSON of a second STEP=new run.)
#   STEP=new   build both (this GPU only), test_zstd_split on every core (its "time" lines), then bench_train.py on
#              TRAIN_CELLS with the new build (crops and single-read latencies into GPU memory)
#   STEP=base  bench_train.py on BASE_CELLS with the baseline (crops only), then bench_split_decode.py on
#              SPLIT_CELLS with the new build (one thread a chunk against the split)
#   STEP=check every target of the new build, ctest (the GPU tests too; not the long hostile and round-trip
#              suites), then bench_split_decode.py on CHECK_CELLS with the baseline and the new build
#   STEP=split bench_split_decode.py on CHECK_CELLS with the baseline and the new build (the library alone)
# Usage: STEP=new bash scripts/gpu/sparse.sh      run carry: [".gpudeps", "shared", ".baseline"]
set -o pipefail
R=$PWD D=$PWD/.gpudeps OUT=${OUT:-/tmp/zgpu-out} STEP=${STEP:-new}
TRAIN_CELLS=${TRAIN_CELLS:-oct_u16.sharded-zstd,field_f32.sharded-zstd,oct_u16.zstd,field_f32.zstd}
BASE_CELLS=${BASE_CELLS:-oct_u16.sharded-zstd,field_f32.sharded-zstd}
SPLIT_CELLS=${SPLIT_CELLS:-oct_u16.zstd,field_f32.zstd,oct_u16.sharded-zstd} CHECK_CELLS=${CHECK_CELLS:-oct_u16.zstd}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-} PYTHONPATH=$R/python
export ZGPU_CACHE_DIR=/tmp/zgpu-cache
build() { # source dir, build dir, extra targets
    [ -f "$2/lib/libzgpu.so" ] && return 0
    cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON -DZGPU_CUDA_ARCHS=native -DCMAKE_PREFIX_PATH=$D/usr \
        -DCMAKE_INCLUDE_PATH=$D/usr/include -DCMAKE_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu;$D/lib/x86_64-linux-gnu" \
        > "$OUT/cmake-$(basename $2).log" 2>&1 &&
    cmake --build "$2" -j8 --target zgpu $3 > "$OUT/build-$(basename $2).log" 2>&1 ||
        { grep -E "error" "$OUT/build-$(basename $2).log" | head -20; return 1; }
}
train() { # lib, cells, parts, json
    PYTHONUNBUFFERED=1 python3 bench/bench_train.py --lib "$1" --planes 64 --repeat 2 --crops 128 --parts "$3" \
        --skip-zarr-python --cells "$2" --json "$4" 2>&1 | grep -E "^\| " | tail -70
}
nvidia-smi -L
if [ "$STEP" = new ]; then
    t0=$(date +%s)
    build "$R" /tmp/zgpu-new test_zstd_split & b1=$!
    [ -d "$R/.baseline" ] && { build "$R/.baseline" /tmp/zgpu-base & b2=$!; }
    wait $b1 || exit 1
    [ -n "${b2:-}" ] && { wait $b2 || exit 1; }
    echo "built in $(( $(date +%s) - t0 )) s"
    /tmp/zgpu-new/bin/test_zstd_split > $OUT/test_zstd_split.log 2>&1
    echo "test_zstd_split rc=$? $(tail -1 $OUT/test_zstd_split.log)"; grep -E "^time|sparse literals" $OUT/test_zstd_split.log
    train /tmp/zgpu-new/lib/libzgpu.so "$TRAIN_CELLS" crops,latency $OUT/train-new${TAG:-}.json
elif [ "$STEP" = split ]; then
    build "$R/.baseline" /tmp/zgpu-base & b2=$!
    build "$R" /tmp/zgpu-new || exit 1
    wait $b2 || exit 1
    for b in base new; do
        echo "split decodes, $b build:"
        PYTHONUNBUFFERED=1 timeout 120 python3 bench/bench_split_decode.py --lib /tmp/zgpu-$b/lib/libzgpu.so --repeat 3 \
            --cells "$CHECK_CELLS" --json $OUT/split-$b.json 2>&1 | grep -E "^\| " | tail -8
    done
elif [ "$STEP" = check ]; then
    t0=$(date +%s)
    build "$R/.baseline" /tmp/zgpu-base & b2=$!
    build "$R" /tmp/zgpu-new && cmake --build /tmp/zgpu-new -j16 > $OUT/build-all.log 2>&1 ||
        { grep -E "error" $OUT/build-all.log | head -20; exit 1; }
    wait $b2 || exit 1
    echo "built in $(( $(date +%s) - t0 )) s"
    (cd /tmp/zgpu-new && timeout 300 ctest -j8 --output-on-failure -E "hostile|blosc_parse|roundtrip" > $OUT/ctest.log 2>&1;
     echo "ctest rc=$?"; grep -E "tests passed|\*\*\*Failed|Timeout" $OUT/ctest.log | head -20)
    for b in base new; do
        echo "split decodes, $b build:"
        PYTHONUNBUFFERED=1 timeout 120 python3 bench/bench_split_decode.py --lib /tmp/zgpu-$b/lib/libzgpu.so --repeat 3 \
            --cells "$CHECK_CELLS" --json $OUT/split-$b.json 2>&1 | grep -E "^\| " | tail -8
    done
else
    train /tmp/zgpu-base/lib/libzgpu.so "$BASE_CELLS" crops $OUT/train-base.json
    PYTHONUNBUFFERED=1 python3 bench/bench_split_decode.py --lib /tmp/zgpu-new/lib/libzgpu.so --repeat 3 \
        --cells "$SPLIT_CELLS" --json $OUT/split.json 2>&1 | grep -E "^\| " | tail -30
fi
