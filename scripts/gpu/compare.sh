#!/usr/bin/env bash
# On the GPU machine: the 12 benchmark cells read by two builds side by side (bench/compare_gpu.py), the
# working tree's against a baseline source tree carried in .baseline/ (made here with
#   mkdir .baseline && git archive <commit> -- src include cmake CMakeLists.txt cli examples | tar -x -C .baseline
# and git-ignored through .git/info/exclude). Both build for sm_90 only (the H100), so the timings compare code,
# not architectures. NEW=dir builds another source tree than the working tree's as B (e.g. a snapshot).
# Usage: [NEW=dir] bash scripts/gpu/compare.sh [compare_gpu.py args, e.g. --rounds 3]
#   run  carry: [".gpudeps", ".nvcomp", ".whl", "shared", ".baseline"]
set -o pipefail
R=$PWD D=$PWD/.gpudeps OUT=${OUT:-/tmp/zgpu-out}
mkdir -p "$OUT"
export ZGPU_NVCOMP_LIB=$R/.nvcomp LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
build() { # source dir, build dir
    rm -rf "$2"
    cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DZGPU_CUDA_ARCHS=90 -DCMAKE_PREFIX_PATH=$D/usr -DCMAKE_INCLUDE_PATH=$D/usr/include \
        -DCMAKE_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu;$D/lib/x86_64-linux-gnu" > "$OUT/cmake-$(basename $2).log" 2>&1 &&
    cmake --build "$2" -j16 --target zgpu > "$OUT/build-$(basename $2).log" 2>&1 ||
        { grep -E "error" "$OUT/build-$(basename $2).log" | head -20; return 1; }
}
build "$R/.baseline" /tmp/zgpu-base & b1=$!
build "${NEW:-$R}" /tmp/zgpu-new & b2=$!
wait $b1 || exit 1
wait $b2 || exit 1
nvidia-smi -L
PYTHONUNBUFFERED=1 python3 bench/compare_gpu.py --lib-a /tmp/zgpu-base/lib/libzgpu.so --lib-b /tmp/zgpu-new/lib/libzgpu.so \
    --data /tmp/zgpu-bench-data --markdown "$OUT/compare.md" "$@" 2>&1 | tee "$OUT/compare.log" | grep -v '^wrote'
