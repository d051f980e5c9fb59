#!/usr/bin/env bash
# Peak memory of the zgpu command on arrays of 1.6 GB: `zgpu read` to /dev/null and `zgpu cp` stay under 300 MB,
# and `zgpu read` to a .npy holds no more for a larger array. The arrays are cheap: every chunk is missing (the fill
# value) but one. Runs from tests/cli/test_cli.sh; alone: tests/cli/test_cli_memory.sh [path/to/zgpu]
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LIMIT_KB=$((300 * 1000))
# a sanitizer build (its shadow memory) neither starts under an address-space limit nor says anything about RSS
if [ "$( (ulimit -v 4000000; "$ZGPU" --version > /dev/null 2>&1; echo $?) 2> /dev/null)" != 0 ]; then
    echo "skipped: peak memory (this zgpu does not start under an address-space limit: sanitizer?)"
    exit 0
fi

# peak_kb OUT CMD...: runs CMD, its peak resident set (KiB) into $OUT; the exit status is CMD's
peak_kb() {
    local out=$1
    shift
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f %M -o "$out.time" "$@"
        local rc=$?
        tail -n 1 "$out.time" > "$out"
        return $rc
    fi
    python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$out" "$@"
}

# sparse NAME PLANES [rows|all]: a uint8 array of PLANES x 1024 x 1024 (chunks 64 x 256 x 256, fill value 7) whose
# stored chunks are the random one of one.zarr (links to it): chunk (0, 0, 0), with "rows" the first of each row
# of chunks along axis 0, with "all" every chunk
mknpy one.npy "|u1" "(64, 256, 256)" 4194304 False half
"$ZGPU" write one.zarr one.npy --chunks 64,256,256 --codec lz4 > /dev/null || { echo "FAIL: write one.zarr"; exit 1; }
sparse() {
    rm -rf "$1" && mkdir -p "$1/c/0/0"
    ln one.zarr/c/0/0/0 "$1/c/0/0/0"
    local z y x rows=0 last=0
    [ -n "${3:-}" ] && rows=$(($2 / 64))
    [ "${3:-}" = all ] && last=3
    for ((z = 0; z < rows; z++)); do
        for ((y = 0; y <= last; y++)); do
            mkdir -p "$1/c/$z/$y"
            for ((x = 0; x <= last; x++)); do [ -e "$1/c/$z/$y/$x" ] || ln one.zarr/c/0/0/0 "$1/c/$z/$y/$x"; done
        done
    done
    printf '{"zarr_format": 3, "node_type": "array", "shape": [%d, 1024, 1024], "data_type": "uint8",
 "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64, 256, 256]}},
 "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}, "fill_value": 7,
 "codecs": [{"name": "bytes"}, {"name": "numcodecs.lz4", "configuration": {"acceleration": 1}}]}\n' "$2" > "$1/zarr.json"
}
sparse big.zarr 1600 rows  # 1.68 GB, 25 chunks stored
sparse dense.zarr 1600 all # every chunk stored: every thread decodes

# --threads 16 as on a 16-core machine: the threads' scratch is counted in the memory model like the slabs
# (a region off the chunk grid reads slabs through the pool, each chunk decoded in scratch and copied)
for run in "big.zarr 0" "dense.zarr 16" "dense.zarr 16 --region 1:-1,1:,:-1"; do
    set -- $run
    if peak_kb rss.txt "$ZGPU" read "$1" -o /dev/null --threads "$2" "${@:3}" -v 2> err.txt &&
       [ "$(cat rss.txt)" -lt "$LIMIT_KB" ]; then
        ok
    else
        bad "read $run to /dev/null: peak $(cat rss.txt) KiB: $(cat err.txt)"
    fi
    echo "read $run (1.6 GB) to /dev/null: peak $(cat rss.txt) KiB; $(tail -n 1 err.txt)"
done
if peak_kb rss.txt "$ZGPU" cp big.zarr copy.zarr -q --threads 16 2> err.txt && [ "$(cat rss.txt)" -lt "$LIMIT_KB" ] &&
   "$ZGPU" read copy.zarr --region 1536:,0:256,0:256 -o c.npy 2>> err.txt; then
    ok
else
    bad "cp 1.6 GB --threads 16: peak $(cat rss.txt) KiB: $(cat err.txt)"
fi
echo "cp 1.6 GB, --threads 16: peak $(cat rss.txt) KiB"
# the copy holds the stored chunks (the rest is the fill value, stored as nothing)
"$ZGPU" read one.zarr -o one_r.npy 2> err.txt && cmp -s one_r.npy c.npy && [ "$(ls copy.zarr/c/24/0)" = 0 ] && ok ||
    bad "cp of the sparse array: $(cat err.txt) $(ls copy.zarr/c/24/0)"
rm -rf copy.zarr

# to a .npy: 4 MiB slabs, 24 and 96 MiB arrays; the larger holds no more memory
sparse small.zarr 24
sparse large.zarr 96
for a in small large; do
    ZGPU_CLI_SLAB_BYTES=4194304 peak_kb "rss_$a.txt" "$ZGPU" read "$a.zarr" -o "$a.npy" 2> err.txt || bad "read $a: $(cat err.txt)"
done
s=$(cat rss_small.txt) l=$(cat rss_large.txt)
size=$(stat -c %s large.npy)
[ "$l" -lt $((s + 8192)) ] && [ "$l" -lt 100000 ] && [ "$size" -eq $((96 * 1024 * 1024 + 128)) ] && ok ||
    bad ".npy peak memory grows with the array: 24 MiB: $s KiB, 96 MiB: $l KiB (file $size bytes)"
echo "read to .npy with 4 MiB slabs: 24 MiB array: peak $s KiB, 96 MiB array: peak $l KiB"
rm -f small.npy large.npy

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
