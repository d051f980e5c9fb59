#!/usr/bin/env bash
# `make demo` (after deps + build): writes a sample 256x512x512 uint16 volume with zgpu, describes it,
# reads it back and checks every value, then times whole-array reads on the GPU when there is one
# (and always on the CPU), and prints what it did.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ZGPU="${ZGPU:-$ROOT/build/bin/zgpu}"
PY="${PY:-$ROOT/.venv/bin/python}"
DIR="$ROOT/demo-data"
NPY="$DIR/oct_u16.npy"
ARR="$DIR/oct_u16.zarr"
SHARED="$(git rev-parse --show-toplevel 2>/dev/null || echo "$ROOT")/../shared"
[ -f "$SHARED/bench/datasets.py" ] || SHARED="$ROOT/../shared"

[ -x "$ZGPU" ] || { echo "demo: $ZGPU not built (run: make build)" >&2; exit 1; }
command -v "$PY" >/dev/null || { echo "demo: $PY missing (run: make deps)" >&2; exit 1; }
mkdir -p "$DIR"

say() { printf '\n== %s\n' "$*"; }
now() { date +%s.%N; }

say "1. sample data: OCT-like uint16 volume 256x512x512 (128 MiB) from datasets.py -> $NPY"
if [ ! -f "$NPY" ]; then
    "$PY" - "$SHARED/bench" "$NPY" <<'EOF'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
try:
    import datasets
    vol = datasets.make("oct_u16", planes=256)[:, :512, :512]
except ImportError:  # no shared folder: the same kind of data, made here
    rng = np.random.default_rng(0)
    z, y, x = np.ogrid[:256, :512, :512]
    base = 12000 + 9000 * np.sin(z / 37.0) * np.cos(y / 53.0) + 5000 * np.sin(x / 29.0 + y / 71.0)
    vol = (base.astype(np.uint16) & 0xFFF0) | rng.integers(0, 16, size=(256, 512, 512), dtype=np.uint16)
np.save(sys.argv[2], np.ascontiguousarray(vol))
EOF
fi
ls -l "$NPY"

say "2. zgpu write (Zarr v3, zstd, chunks 64x256x256)"
echo "\$ zgpu write $ARR $NPY --format 3 --chunks 64,256,256 --codec zstd --overwrite"
t0=$(now)
"$ZGPU" write "$ARR" "$NPY" --format 3 --chunks 64,256,256 --codec zstd --overwrite
t1=$(now)
WRITE_S=$("$PY" -c "print('%.2f' % ($t1 - $t0))")
STORED=$(find "$ARR" -type f ! -name zarr.json -printf '%s\n' | awk '{s+=$1} END {print s+0}')
RAW=$((256 * 512 * 512 * 2))
RATIO=$("$PY" -c "print('%.2f' % ($RAW / max(1, $STORED)))")
echo "wrote $STORED bytes of chunks (compression ratio $RATIO) in $WRITE_S s"

say "3. zgpu info"
"$ZGPU" info "$ARR"

say "4. read back and compare every element with the source"
"$ZGPU" read "$ARR" -o "$DIR/back.npy"
"$PY" -c "
import numpy as np, sys
a, b = np.load('$NPY'), np.load('$DIR/back.npy')
ok = a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)
print('identical: %d elements, %s' % (a.size, a.dtype) if ok else 'MISMATCH between source and zgpu read')
sys.exit(0 if ok else 1)"
rm -f "$DIR/back.npy"

TARGET="CPU ($(nproc) cores)"
GPU_LINE=""
if command -v nvidia-smi >/dev/null 2>&1 && GPU_NAME=$(nvidia-smi -L 2>/dev/null | head -1 | sed 's/ (UUID.*//; s/^GPU [0-9]*: //') && [ -n "$GPU_NAME" ]; then
    say "5a. zgpu bench on the GPU: $GPU_NAME"
    if "$ZGPU" bench "$ARR" --device cuda:0 | tee "$DIR/bench-gpu.txt"; then
        TARGET="GPU ($GPU_NAME) and CPU"
        GPU_LINE=$(sed -n 's/^decoded: *//p' "$DIR/bench-gpu.txt" | head -1)
    else
        echo "(GPU read failed: this build may lack CUDA support; see the message above)"
    fi
fi

say "5. zgpu bench on the CPU"
"$ZGPU" bench "$ARR" | tee "$DIR/bench-cpu.txt"
CPU_LINE=$(sed -n 's/^decoded: *//p' "$DIR/bench-cpu.txt" | head -1)

say "summary"
cat <<EOF
zgpu made a 256x512x512 uint16 volume (OCT-like layered data with speckle noise, 128 MiB), wrote it as a
Zarr v3 array with zgpu ($ARR: 16 chunks of 64x256x256, zstd, $STORED bytes stored, ratio $RATIO, in $WRITE_S s),
printed its metadata, read it back and checked that every element equals the source, then timed
whole-array reads with 'zgpu bench' (median of 5 after a warm-up, page cache warm).
Decoded throughput, CPU ($(nproc) cores): ${CPU_LINE:-see above}${GPU_LINE:+
Decoded throughput, GPU: $GPU_LINE}
Reads ran on: $TARGET. Try it on your own data: build/bin/zgpu info|read|bench PATH (see zgpu --help).
EOF
