#!/usr/bin/env bash
# On the GPU machine after run.sh (uses /tmp/zgpu-build and /tmp/zgpu-bench-data): each kernel launch's time
# (ncu's gpu__time_duration, kernels serialized) in one `zgpu bench` read of a benchmark array, after its warm-up
# read. How docs/benchmarks.md's per-wave kernel times were taken.
# Usage: [WAVES=3] [KERNELS=lz4|zstd|...] bash scripts/gpu/kernel-times.sh field_f32.blosc-lz4-shuffle ...
D=$PWD/.gpudeps B=/tmp/zgpu-build
export PATH=/usr/local/cuda/bin:$PATH ZGPU_NVCOMP_LIB=$PWD/.nvcomp
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
for a in "$@"; do
    echo "== $a, waves: ${WAVES:-default}"
    if [ -n "${WAVES:-}" ]; then export ZGPU_PIPELINE_WAVES=$WAVES; fi
    timeout 300 ncu --metrics gpu__time_duration.sum --csv $B/bin/zgpu bench /tmp/zgpu-bench-data/$a.zgpu.zarr \
        --device cuda:0 --repeat 1 2>/dev/null > /tmp/kernel-times.csv
    python3 - "${KERNELS:-.}" <<'PY'
import csv, re, sys
rows = [r for r in csv.reader(open("/tmp/kernel-times.csv")) if len(r) > 10]
if not rows:
    sys.exit(print("no ncu rows (is ncu there? see /tmp/kernel-times.csv)"))
h = rows[0]
name, value = h.index("Kernel Name"), len(h) - 1
rows = rows[1:]
rows = rows[len(rows) // 2:]  # the timed read (the first half is the warm-up's)
for r in rows:
    if re.search(sys.argv[1], r[name]):
        print(f"{float(r[value].replace(',', '')) / 1e6:9.3f} ms  {r[name][:90]}")
PY
done
