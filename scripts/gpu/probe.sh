#!/usr/bin/env bash
# Tuning probe on the GPU machine after run.sh (uses /tmp/zgpu-build and /tmp/zgpu-bench-data): `zgpu bench` on
# some benchmark arrays with the decoders' per-kernel profile (ZGPU_PROFILE), pipelined (default) and in one wave.
# Usage: bash scripts/gpu/probe.sh oct_u16.zstd field_f32.blosc-lz4-shuffle ...
D=$PWD/.gpudeps B=/tmp/zgpu-build
export ZGPU_NVCOMP_LIB=$PWD/.nvcomp LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
for a in "$@"; do
    p=/tmp/zgpu-bench-data/$a.zgpu.zarr
    f=$(find $p -type f -path '*/c/*' | head -1)
    [[ $a == *blosc* ]] && python3 -c "import struct,sys; h=open('$f','rb').read(16); print('$a blosc: typesize', h[3], 'nbytes', struct.unpack('<I',h[4:8])[0], 'blocksize', struct.unpack('<I',h[8:12])[0], 'cbytes', struct.unpack('<I',h[12:16])[0])"
    for w in 3 1; do
        echo "== $a, ZGPU_PIPELINE_WAVES=$w"
        ZGPU_PIPELINE_WAVES=$w ZGPU_PROFILE=${PROFILE:-1} $B/bin/zgpu bench $p --device cuda:0 --repeat 3 2>&1 | tail -${TAIL:-14}
    done
done
# KERNELS=1: also the GPU time of every kernel of one read (Nsight Compute, kernels serialized)
if [ -n "$KERNELS" ]; then
    for a in "$@"; do
        echo "== $a: kernels of one read"
        timeout 300 ncu --metrics gpu__time_duration.sum --print-summary per-kernel $B/bin/zgpu bench \
            /tmp/zgpu-bench-data/$a.zgpu.zarr --device cuda:0 --repeat 1 --warmup 0 2>&1 |
            grep -E "^\s+[a-zA-Z_(].*\(|gpu__time_duration" | sed 's/  */ /g' | cut -c1-160 | paste - - | head -30
    done
fi
