#!/usr/bin/env bash
# On the GPU machine after run.sh (uses /tmp/zgpu-build): the SASS instructions of one kernel launch with the most
# warp-stall samples, and the launch's stall reasons (tuning aid).
# Usage: KERNEL=zg_inflate_parts_kernel [SKIP=0] [TOP=40] [STALLS=1] bash scripts/gpu/ncu-kernel.sh command args...
set -o pipefail
D=$PWD/.gpudeps
export ZGPU_NVCOMP_LIB=$PWD/.nvcomp LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
timeout 400 ncu --kernel-name "regex:${KERNEL:?}" --launch-skip ${SKIP:-0} --launch-count 1 --section SourceCounters \
    --section WarpStateStats --page source --print-source sass --csv "$@" > /tmp/sass.csv 2>/tmp/ncu.err ||
    { tail -5 /tmp/ncu.err; exit 1; }
python3 - <<'PY'
import csv, os
rows = list(csv.reader(open("/tmp/sass.csv")))
hdr = next(i for i, r in enumerate(rows) if "Source" in r)
h = rows[hdr]; body = [r for r in rows[hdr + 1:] if len(r) == len(h)]
col = next(i for i, c in enumerate(h) if c.startswith("Warp Stall Sampling (All"))
src = h.index("Source")
num = lambda v: float(v) if v.replace(".", "", 1).isdigit() else 0.0
tot = sum(num(r[col]) for r in body) or 1
top = sorted(body, key=lambda r: -num(r[col]))[:int(os.environ.get("TOP", 40))]
for r in top:
    print(f"{num(r[col]) / tot * 100:5.1f}%  {r[0]:>6}  {r[src]}")
PY
[ "${STALLS:-1}" = 1 ] && timeout 300 ncu --kernel-name "regex:${KERNEL:?}" --launch-skip ${SKIP:-0} --launch-count 1 \
    --section WarpStateStats --page details "$@" 2>/dev/null | grep -E "Stall|Warp Cycles|Issued" | head -40
