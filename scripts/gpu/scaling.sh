#!/usr/bin/env bash
# On the GPU machine: how host reads of random crops scale with threads (bench/probe_scaling.py), the working tree
# built for this GPU, and, where .baseline/ holds an older source tree (git archive <commit> -- src include cmake
# CMakeLists.txt cli examples bench fuzz tests | tar -x -C .baseline), that tree too, run in turn.
# CELLS, THREADS, READS, CROPS, REPEAT, VARIANTS pass through.
# Usage: bash scripts/gpu/scaling.sh      run carry: [".gpudeps", "shared"] (+ ".baseline")
set -o pipefail
R=$PWD D=$PWD/.gpudeps OUT=${OUT:-/tmp/zgpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-} PYTHONPATH=$R/python
build() { # source dir, build dir
    [ -f "$2/lib/libzgpu.so" ] && return 0
    cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON -DZGPU_CUDA_ARCHS=native -DCMAKE_PREFIX_PATH=$D/usr \
        -DCMAKE_INCLUDE_PATH=$D/usr/include -DCMAKE_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu;$D/lib/x86_64-linux-gnu" \
        > "$OUT/cmake-$(basename $2).log" 2>&1 && cmake --build "$2" -j8 --target zgpu > "$OUT/build-$(basename $2).log" 2>&1 ||
        { grep -E "error" "$OUT/build-$(basename $2).log" | head -20; return 1; }
}
t0=$(date +%s)
build "$R" /tmp/zgpu-new & b1=$!
[ -d "$R/.baseline" ] && { build "$R/.baseline" /tmp/zgpu-base & b2=$!; }
wait $b1 || exit 1
[ -n "${b2:-}" ] && { wait $b2 || exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
nvidia-smi -L; lscpu | grep -E "^Model name|^Thread|^Core"
for b in ${BUILDS:-new base}; do
    [ -f /tmp/zgpu-$b/lib/libzgpu.so ] || continue
    echo "$b build:"
    PYTHONUNBUFFERED=1 python3 bench/probe_scaling.py --lib /tmp/zgpu-$b/lib/libzgpu.so --cells "${CELLS:-oct_u16.sharded-zstd}" \
        --threads "${THREADS:-2,8,16}" --reads "${READS:-patch:8,crop:1}" --crops "${CROPS:-64}" --repeat "${REPEAT:-2}" \
        --variants "${VARIANTS:-default}" ${PROBE_ARGS:-} | grep -E "^\| [a-z]"
done
