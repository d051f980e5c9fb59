#!/usr/bin/env bash
# On the GPU machine after run.sh (uses /tmp/zgpu-build and /tmp/zgpu-bench-data): each wave's timeline
# (ZGPU_TRACE=1: host I/O done, work queued; device H2D, decode and scatter ends, ms since the read's fork) of
# `zgpu bench` reads of some benchmark arrays, for several wave shapes (shrink|even) and counts.
# Usage: [CONFIGS="default even:3 shrink:3"] bash scripts/gpu/trace-waves.sh oct_u16.zstd field_f32.zstd ...
D=$PWD/.gpudeps B=/tmp/zgpu-build
export ZGPU_NVCOMP_LIB=$PWD/.nvcomp LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
for a in "$@"; do
    for c in ${CONFIGS:-default even:3 shrink:3 shrink:6}; do
        echo "== $a, waves: $c"
        unset ZGPU_PIPELINE_WAVES ZGPU_PIPELINE_SHAPE
        [ "$c" != default ] && export ZGPU_PIPELINE_SHAPE=${c%%:*} ZGPU_PIPELINE_WAVES=${c##*:}
        ZGPU_TRACE=1 $B/bin/zgpu bench /tmp/zgpu-bench-data/$a.zgpu.zarr --device cuda:0 --repeat ${REPEAT:-5} 2>&1 |
            tail -${TAIL:-22}
    done
done
