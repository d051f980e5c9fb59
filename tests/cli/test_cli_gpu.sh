#!/usr/bin/env bash
# GPU tests of the zgpu command: `read --device cuda:0` must give the same bytes as a host read, for each
# codec and layout; `bench --device` must report the device stages. Exits 77 (skipped) without a GPU.
# Usage: tests/cli/test_cli_gpu.sh [path/to/zgpu]   (default build/bin/zgpu)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Probe with a real array: the GPU check comes after the array is opened.
mknpy probe.npy "<u1" "(4,)" 4 False half
"$ZGPU" write probe.zarr probe.npy > /dev/null 2>&1
"$ZGPU" read probe.zarr -o /dev/null --device cuda:0 2> err.txt
if grep -q "no GPU" err.txt; then
    echo "skipped: $(cat err.txt)"
    exit 77
fi

mknpy in.npy "<f4" "(512, 384)" $((512 * 384 * 4)) False half
for c in none zstd zstd:1+crc32c gzip zlib bz2 lz4 blosc:lz4:5:shuffle blosc:zstd:3:bitshuffle blosc:blosclz:5:noshuffle; do
    for layout in "--chunks 64,128" "--chunks 32,64 --shards 128,384" "--chunks 100,70"; do
        rm -rf a.zarr
        if "$ZGPU" write a.zarr in.npy --codec "$c" $layout 2> err.txt &&
           "$ZGPU" read a.zarr -o host.npy 2>> err.txt &&
           "$ZGPU" read a.zarr -o dev.npy --device cuda:0 2>> err.txt && cmp -s host.npy dev.npy &&
           "$ZGPU" read a.zarr -o devr.npy --device cuda:0 --region 10:-7,-100 2>> err.txt &&
           "$ZGPU" read a.zarr -o hostr.npy --region 10:-7,-100 2>> err.txt && cmp -s hostr.npy devr.npy; then
            ok
        else
            bad "device read, codec $c $layout: $(cat err.txt)"
        fi
    done
done
# v2 as well
rm -rf b.zarr
if "$ZGPU" write b.zarr in.npy --format 2 --codec blosc:lz4 --chunks 64,64 2> err.txt &&
   "$ZGPU" read b.zarr -o host.npy 2>> err.txt && "$ZGPU" read b.zarr -o dev.npy --device cuda:0 2>> err.txt &&
   cmp -s host.npy dev.npy; then ok; else bad "v2 device read: $(cat err.txt)"; fi

if "$ZGPU" bench a.zarr --device cuda:0 --repeat 3 > bench.txt 2> err.txt && grep -q '^stages:' bench.txt &&
   grep -q 'GPU-decoded' bench.txt; then
    ok
    cat bench.txt
else
    bad "bench --device: $(cat err.txt) $(cat bench.txt)"
fi
"$ZGPU" read a.zarr -o /dev/null --device cuda:99 2> err.txt
[ $? -eq 1 ] && grep -q '^zgpu: error: ' err.txt && ok || bad "bad device ordinal: $(cat err.txt)"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
