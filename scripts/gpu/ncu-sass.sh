#!/usr/bin/env bash
# On the GPU machine after profile-zstd.sh: the SASS instructions of one kernel with the most warp-stall samples
# (tuning aid). KERNEL=k1_huffman SAMPLE=/tmp/oct_u16.raw TOP=40.
set -o pipefail
D=$PWD/.gpudeps B=/tmp/zgpu-build
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
cd $B && ZGPU_ZSTD_SAMPLE_ONLY=1 ZGPU_ZSTD_SAMPLE=${SAMPLE:-/tmp/oct_u16.raw} timeout 300 ncu --kernel-name "regex:${KERNEL:-k1_huffman}" \
    --launch-count 1 --section SourceCounters --section WarpStateStats --page source --print-source sass --csv ./bin/test_gpu_zstd > /tmp/sass.csv 2>/dev/null
python3 - <<'PY'
import csv, os
rows = list(csv.reader(open("/tmp/sass.csv")))
hdr = next(i for i, r in enumerate(rows) if "Source" in r)
h = rows[hdr]; body = rows[hdr + 1:]
print(h)
col = next(i for i, c in enumerate(h) if c.startswith("Warp Stall Sampling (All"))
src = h.index("Source")
tot = sum(float(r[col] or 0) for r in body if len(r) > col)
top = sorted(body, key=lambda r: -float(r[col] or 0) if len(r) > col else 0)[:int(os.environ.get("TOP", 40))]
for r in top:
    print(f"{float(r[col]) / tot * 100:5.1f}%  {r[0]:>6}  {r[src]}")
PY
