#!/usr/bin/env bash
# On the GPU machine after run.sh (uses /tmp/zgpu-build and /tmp/zgpu-bench-data): an Nsight Systems profile of
# `zgpu bench` reads of one benchmark array: the kernels' time summary and the last read's GPU timeline
# (kernels and copies, ms). Usage: [REPEAT=3] bash scripts/gpu/nsys-read.sh field_f32.blosc-lz4-shuffle
D=$PWD/.gpudeps B=/tmp/zgpu-build OUT=${OUT:-/tmp/zgpu-out}
export ZGPU_NVCOMP_LIB=$PWD/.nvcomp LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
NSYS=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
[ -n "$NSYS" ] || { echo "nsys not found"; ls /usr/local/cuda*/bin | head -50; exit 1; }
mkdir -p "$OUT"
for a in "$@"; do
    rep=$OUT/nsys_${a//./_}
    "$NSYS" profile -o "$rep" --force-overwrite true -t cuda $B/bin/zgpu bench /tmp/zgpu-bench-data/$a.zgpu.zarr \
        --device cuda:0 --repeat ${REPEAT:-3} > /dev/null 2>&1 || { echo "nsys profile failed"; continue; }
    echo "== $a: kernels"
    "$NSYS" stats -q -r cuda_gpu_kern_sum -f csv "$rep.nsys-rep" 2>/dev/null | cut -d, -f1-4,9 | head -14
    echo "== $a: the last read's GPU work (start ms, duration ms, name)"
    "$NSYS" stats -q -r cuda_gpu_trace -f csv "$rep.nsys-rep" 2>/dev/null > "$rep.trace.csv"
    python3 - "$rep.trace.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
if not rows: sys.exit(print("no trace rows"))
k0 = [k for k in rows[0] if k.startswith("Start")][0]; kd = [k for k in rows[0] if k.startswith("Duration")][0]
ev = sorted((int(r[k0]), int(r[kd]), r.get("Name", "")[:60], r.get("Strm", "")) for r in rows)
# the last read: after the largest gap between consecutive work items
gaps = [(ev[i + 1][0] - (ev[i][0] + ev[i][1]), i + 1) for i in range(len(ev) - 1)]
start = max(gaps)[1] if gaps else 0
t0 = ev[start][0]
agg = {}
for s, d, n, st in ev[start:]:
    key = (n, st)
    a = agg.setdefault(key, [s, s + d, 0, 0])
    a[0] = min(a[0], s); a[1] = max(a[1], s + d); a[2] += d; a[3] += 1
for (n, st), (s, e, busy, c) in sorted(agg.items(), key=lambda x: x[1][0]):
    print(f"{(s - t0) / 1e6:8.2f} .. {(e - t0) / 1e6:8.2f} ms  busy {busy / 1e6:7.2f} ms  x{c:<5} strm {st:>3}  {n}")
PY
done
