#!/usr/bin/env bash
# On the GPU machine after run.sh (uses /tmp/zgpu-build and /tmp/zgpu-bench-data): each wave's timeline
# (ZGPU_TRACE=1: host I/O done, work queued; device H2D, decode and scatter ends, ms since the read's fork) of
# `zgpu bench` reads of some benchmark arrays, for several wave counts.
# Usage: [WAVES="2 3 4"] bash scripts/gpu/trace-waves.sh oct_u16.zstd field_f32.blosc-lz4-shuffle ...
D=$PWD/.gpudeps B=/tmp/zgpu-build
export ZGPU_NVCOMP_LIB=$PWD/.nvcomp LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
for a in "$@"; do
    for w in ${WAVES:-default 2 3 4}; do
        echo "== $a, waves: $w"
        if [ "$w" = default ]; then unset ZGPU_PIPELINE_WAVES; else export ZGPU_PIPELINE_WAVES=$w; fi
        ZGPU_TRACE=1 $B/bin/zgpu bench /tmp/zgpu-bench-data/$a.zgpu.zarr --device cuda:0 --repeat 3 2>&1 | tail -${TAIL:-22}
    done
done
