#!/usr/bin/env bash
# GPU tests of the zgpu command: `read --device cuda:0` must give the same bytes as a host read, for each
# codec and layout; `bench --device` must report the device stages; `cp --device cuda:0` must copy element for
# element (and zarr-python read the copies, where it is found). Exits 77 (skipped) without a GPU.
# Usage: tests/cli/test_cli_gpu.sh [path/to/zgpu]   (default build/bin/zgpu)
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/lib.sh"

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
# ---- cp --device (issue 24): slabs decoded into GPU memory and written from there. A gzip array recompressed to
# zstd, rechunked, resharded, to v2 and to codecs the GPU does not encode (host threads), in one slab and in many
# (both slab buffers in turn); each copy read back and compared with the source element by element, and, where a
# Python with zarr-python is found, read by zarr-python ----
echo "cp --device:"
mknpy cpin.npy "<u2" "(300, 257, 3)" $((300 * 257 * 3 * 2)) False half
rm -rf g.zarr
"$ZGPU" write g.zarr cpin.npy --codec gzip --chunks 64,64,3 2> err.txt && "$ZGPU" read g.zarr -o cpref.npy 2>> err.txt ||
    bad "gzip source: $(cat err.txt)"
k=0
copies=()
for opts in "--codec zstd" "--codec zstd:3 --chunks 50,100,3" "--codec zstd --chunks 16,32,3 --shards 64,128,3" \
            "--codec lz4 --chunks 100,257,1" "--codec zlib --format 2 --chunks 33,40,3" "--codec blosc:zstd:3:shuffle" \
            "--chunks 10,257,3"; do
    for sb in "" 100000; do
        k=$((k + 1))
        rm -rf "c$k.zarr"
        if env ${sb:+ZGPU_CLI_SLAB_BYTES=$sb} "$ZGPU" cp g.zarr "c$k.zarr" $opts --device cuda:0 2> err.txt &&
           grep -q '^zgpu: copied ' err.txt && "$ZGPU" read "c$k.zarr" -o c.npy 2>> err.txt && cmp -s cpref.npy c.npy; then
            ok
            copies+=("c$k.zarr")
        else
            bad "cp --device $opts ${sb:+(slabs of $sb bytes)}: $(cat err.txt)"
        fi
    done
done
grep -q '"zstd"' c1.zarr/zarr.json && ! grep -q '"gzip"' c1.zarr/zarr.json && ok || bad "cp --device --codec zstd: $(cat c1.zarr/zarr.json)"
# SRC's codecs kept; --overwrite; an empty array; a 0-d array
"$ZGPU" cp g.zarr c1.zarr --device cuda:0 -q 2> err.txt
[ $? -eq 1 ] && ok || bad "cp --device onto an existing DST: $(cat err.txt)"
"$ZGPU" cp g.zarr c1.zarr --device cuda:0 -q --overwrite 2> err.txt && grep -q '"gzip"' c1.zarr/zarr.json &&
    "$ZGPU" read c1.zarr -o c.npy 2>> err.txt && cmp -s cpref.npy c.npy && ok || bad "cp --device --overwrite: $(cat err.txt)"
for t in "<f4|(0, 5)|0" "<f8|()|8"; do
    IFS='|' read -r descr shape nb <<< "$t"
    mknpy e.npy "$descr" "$shape" "$nb"
    rm -rf e.zarr e2.zarr
    "$ZGPU" write e.zarr e.npy --codec gzip 2> err.txt && "$ZGPU" cp e.zarr e2.zarr --codec zstd --device cuda:0 2>> err.txt &&
        "$ZGPU" read e.zarr -o e1.npy 2>> err.txt && "$ZGPU" read e2.zarr -o e2.npy 2>> err.txt && cmp -s e1.npy e2.npy &&
        ok || bad "cp --device, shape $shape: $(cat err.txt)"
done
# a device that is not there: a clean failure, nothing created
rm -rf x.zarr
"$ZGPU" cp g.zarr x.zarr --device cuda:99 2> err.txt
[ $? -eq 1 ] && grep -q '^zgpu: error: --device cuda:99' err.txt && [ ! -e x.zarr ] && ok || bad "cp --device cuda:99: $(cat err.txt)"

PY=""
for p in "${ZGPU_TEST_PYTHON:-}" "$HERE/../../.venv/bin/python" python3; do
    [ -n "$p" ] && "$p" -c 'import numpy, zarr' 2> /dev/null && { PY=$p; break; }
done
if [ -n "$PY" ] && [ ${#copies[@]} -gt 0 ]; then
    "$PY" - cpin.npy "${copies[@]}" > py.txt 2>&1 <<'PYEOF'
import sys
import warnings
import numpy as np
import zarr
warnings.simplefilter("ignore")  # numcodecs' codecs in v3 warn that they are not in the specification
want = np.load(sys.argv[1])
bad = 0
for path in sys.argv[2:]:
    got = zarr.open_array(path, mode="r")[...]
    if got.shape != want.shape or got.dtype != want.dtype or not np.array_equal(got, want):
        bad += 1
        print(f"{path}: zarr-python reads {got.shape} {got.dtype}, differing from the source")
print(f"zarr-python {zarr.__version__}: {len(sys.argv) - 2} copies read, {bad} differ")
sys.exit(1 if bad else 0)
PYEOF
    [ $? -eq 0 ] && ok || bad "cp --device read by zarr-python: $(cat py.txt)"
    cat py.txt
    # a TIFF source (tifffile writes a tiled Deflate file): its tiles decoded on the GPU, DST as a host copy's
    if "$PY" -c 'import tifffile' 2> /dev/null; then
        "$PY" -c 'import numpy as np, tifffile
x = (np.arange(300 * 260, dtype=np.uint32).reshape(300, 260) % 977).astype(np.uint16)
tifffile.imwrite("t.tif", x, tile=(64, 64), compression="zlib")' 2> err.txt
        rm -rf th.zarr td.zarr
        "$ZGPU" cp t.tif th.zarr 2>> err.txt && "$ZGPU" cp t.tif td.zarr --device cuda:0 --codec gzip 2>> err.txt &&
            "$ZGPU" read th.zarr -o th.npy 2>> err.txt && "$ZGPU" read td.zarr -o td.npy 2>> err.txt && cmp -s th.npy td.npy &&
            ok || bad "cp --device of a TIFF: $(cat err.txt)"
    else
        echo "skipped: cp --device of a TIFF (no tifffile in $PY)"
    fi
else
    echo "skipped: cp --device read by zarr-python, and of a TIFF (no Python with numpy and zarr)"
fi

"$ZGPU" read a.zarr -o /dev/null --device cuda:99 2> err.txt
[ $? -eq 1 ] && grep -q '^zgpu: error: ' err.txt && ok || bad "bad device ordinal: $(cat err.txt)"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
