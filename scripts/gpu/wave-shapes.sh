#!/usr/bin/env bash
# On the GPU machine after run.sh (uses /tmp/zgpu-build and /tmp/zgpu-bench-data): `zgpu bench` of some
# benchmark arrays under several wave splits: "default", a wave count ("w4": ZGPU_PIPELINE_WAVES=4) or a shape
# ("4,4,3,1": ZGPU_WAVE_SHAPE, the waves' relative sizes). Prints the median decoded GB/s and the stage times.
# Usage: [SPLITS="default w4 4,4,3,1"] [REPEAT=7] bash scripts/gpu/wave-shapes.sh oct_u16.zstd field_f32.zstd ...
D=$PWD/.gpudeps B=/tmp/zgpu-build
export ZGPU_NVCOMP_LIB=$PWD/.nvcomp LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
for a in "$@"; do
    for sp in ${SPLITS:-default w2 w4 w6 3,3,2,1 4,4,3,1 3,3,3,2,1}; do
        unset ZGPU_PIPELINE_WAVES ZGPU_WAVE_SHAPE
        case $sp in
        default) ;;
        w*) export ZGPU_PIPELINE_WAVES=${sp#w} ;;
        *) export ZGPU_WAVE_SHAPE=$sp ;;
        esac
        out=$($B/bin/zgpu bench /tmp/zgpu-bench-data/$a.zgpu.zarr --device cuda:0 --repeat ${REPEAT:-7} 2>&1)
        printf '%-34s %-12s %s | %s | %s\n' "$a" "$sp" "$(grep -m1 '^decoded:' <<<"$out")" \
            "$(grep -m1 -i 'waves' <<<"$out")" "$(grep -m1 -iE '^stages|io ' <<<"$out")"
    done
done
