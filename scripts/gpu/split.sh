#!/usr/bin/env bash
# On the GPU machine: chunks decoded by every idle thread (split_decode: zstd_split.c, deflate_split.c), the working
# tree's build against a baseline source tree carried in .baseline/ (made here with
#   mkdir .baseline && git archive <commit> -- src include cmake CMakeLists.txt cli examples bench fuzz tests | tar -x -C .baseline
# and git-ignored through .git/info/exclude; without it only the working tree's figures). Steps, logs to $OUT:
#   1. test_deflate_split on every core (its "time" lines: one thread against 4, 8 and all ways, per kind of chunk);
#   2. bench_split_decode.py on the gzip cells (one thread a chunk against the split, tensorstore beside);
#   3. bench_train.py on TRAIN_CELLS (default the label gzip cell: crops and single-read latencies into GPU memory),
#      new build then baseline;
#   4. bench_remote.py on the label gzip cell over HTTP and S3, new build then baseline.
# Both builds for this machine's GPU only; about 8 minutes. CELLS (step 2: the three gzip cells), TRAIN_CELLS and
# PLANES (64) change what runs.
# Usage: bash scripts/gpu/split.sh      run carry: [".gpudeps", "shared", ".baseline"]
set -o pipefail
R=$PWD D=$PWD/.gpudeps OUT=${OUT:-/tmp/zgpu-out} PLANES=${PLANES:-64}
CELLS=${CELLS:-labels_u32.gzip,oct_u16.gzip,field_f32.gzip} TRAIN_CELLS=${TRAIN_CELLS:-labels_u32.gzip}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-} PYTHONPATH=$R/python
build() { # source dir, build dir
    rm -rf "$2"
    cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON -DZGPU_CUDA_ARCHS=native -DCMAKE_PREFIX_PATH=$D/usr \
        -DCMAKE_INCLUDE_PATH=$D/usr/include -DCMAKE_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu;$D/lib/x86_64-linux-gnu" \
        > "$OUT/cmake-$(basename $2).log" 2>&1 &&
    cmake --build "$2" -j8 --target zgpu zgpu_range_server $3 > "$OUT/build-$(basename $2).log" 2>&1 ||
        { grep -E "error" "$OUT/build-$(basename $2).log" | head -20; return 1; }
}
t0=$(date +%s)
build "$R" /tmp/zgpu-new test_deflate_split & b1=$!
[ -d "$R/.baseline" ] && { build "$R/.baseline" /tmp/zgpu-base & b2=$!; }
wait $b1 || exit 1
[ -n "${b2:-}" ] && { wait $b2 || exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"; nvidia-smi -L; nproc
(cd /tmp/zgpu-new && timeout 120 ./bin/test_deflate_split > $OUT/test_deflate_split.log 2>&1;
 echo "test_deflate_split rc=$? $(tail -1 $OUT/test_deflate_split.log)"; grep -E "^time" $OUT/test_deflate_split.log)
PYTHONUNBUFFERED=1 timeout 300 python3 bench/bench_split_decode.py --lib /tmp/zgpu-new/lib/libzgpu.so --planes $PLANES \
    --repeat 5 --cells $CELLS --json $OUT/split.json 2>&1 | grep -E "^\|" | tee $OUT/split.md
for b in new base; do
    [ -f /tmp/zgpu-$b/lib/libzgpu.so ] || continue
    echo "== bench_train ($b)"
    ZGPU_CACHE_DIR=/tmp/zgpu-cache-$b PYTHONUNBUFFERED=1 timeout 400 python3 bench/bench_train.py \
        --lib /tmp/zgpu-$b/lib/libzgpu.so --planes $PLANES --repeat 2 --crops 128 --parts crops,latency --cells $TRAIN_CELLS \
        --skip-zarr-python --json $OUT/train-$b.json > $OUT/train-$b.log 2>&1; grep -E "^  " $OUT/train-$b.log
done
for b in new base; do
    [ -f /tmp/zgpu-$b/lib/libzgpu.so ] || continue
    echo "== bench_remote ($b)"
    PYTHONUNBUFFERED=1 timeout 300 python3 bench/bench_remote.py --lib /tmp/zgpu-$b/lib/libzgpu.so --planes $PLANES \
        --repeat 2 --cells labels_u32.gzip --stores http,s3 --targets host,gpu --server c --s3-server c \
        --host-read-route auto-gpu --skip-zarr-python --json $OUT/remote-$b.json > $OUT/remote-$b.log 2>&1; grep -E "^\|" $OUT/remote-$b.log
done
