#!/usr/bin/env bash
# Shell tests of the zgpu command: write -> read and write -> cp -> read round trips that compare every
# data byte, for each data type, format, codec and sharding layout, plus exit codes and error lines.
# Needs only bash and coreutils. Usage: tests/cli/test_cli.sh [path/to/zgpu]   (default build/bin/zgpu)
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/lib.sh"

# data bytes of a .npy (everything after the header)
npy_data() {
    local hlen
    hlen=$(od -An -tu2 -j8 -N2 "$1" | tr -d ' ')
    tail -c +$((hlen + 11)) "$1"
}
same_data() { cmp -s <(npy_data "$1") <(npy_data "$2"); }

expect_rc() { # expect_rc RC CMD...
    local want=$1
    shift
    "$@" > out.txt 2> err.txt
    local rc=$?
    if [ "$rc" -eq "$want" ]; then ok; else bad "rc $rc (wanted $want): $* :: $(cat err.txt)"; fi
}

# ---- write -> read round trips ----
# descr shape nbytes; random bytes are valid for every type (NaN payloads included: compared as bytes).
types=(
    "|u1 (37, 11) 407" "<i2 (20, 30) 1200" "<u4 (7, 5, 3) 420" "<i8 (50,) 400" "<f2 (33, 3) 198"
    "<f4 (64, 64) 16384" "<f8 (9, 10) 720" "<c8 (12,) 96" "<c16 (3, 4) 192" "|i1 (5, 5, 5, 5) 625"
    "<u8 (2, 3) 48" "|V3 (10,) 30" "<f8 () 8" "<i4 (0, 5) 0"
)
codecs=("none" "zstd" "zstd:3:checksum+crc32c" "gzip:1" "zlib" "bz2" "lz4" "blosc:lz4:5:shuffle" "blosc:zstd:1:bitshuffle")
# Sampled (ZGPU_TEST_SAMPLE=1/N[:SEED], tests/unit/sampling.h: make test's Release and sanitizer lines; make
# test-long runs all): a quarter of the round trips, every type with every fourth codec and format, shifted by the
# type and a seed (printed), so that each type and each codec still runs (a process start under the sanitizers
# costs ten times the Release build's); an eighth where the sample is 1 in 32 or rarer (make test's ASan line).
every=1 shift=0
if [[ "${ZGPU_TEST_SAMPLE:-}" =~ ^1/([0-9]+)(:([0-9]+))?$ ]] && [ "${BASH_REMATCH[1]}" -gt 1 ]; then
    every=$(( BASH_REMATCH[1] >= 32 ? 8 : 4 ))
    shift=${BASH_REMATCH[3]:-$RANDOM}
    echo "sampling the write/read round trips: seed $shift"
fi
n=0 ran=0 ti=0
for t in "${types[@]}"; do
    ti=$((ti + 1))
    # words: descr, the shape tuple, the byte count
    words=($t)
    descr=${words[0]}
    nbytes=${words[-1]}
    shape="${t#"$descr "}"
    shape="${shape% "$nbytes"}"
    mknpy in.npy "$descr" "$shape" "$nbytes"
    for c in "${codecs[@]}"; do
        for fmt in 3 2; do
            [ "$fmt" = 2 ] && [[ "$c" == *crc32c* ]] && continue
            n=$((n + 1))
            [ $(((n + ti + shift) % every)) -eq 0 ] || continue
            ran=$((ran + 1))
            rm -rf a.zarr
            if "$ZGPU" write a.zarr in.npy --format "$fmt" --codec "$c" 2> err.txt &&
               "$ZGPU" read a.zarr -o out.npy 2>> err.txt && same_data in.npy out.npy; then
                ok
            else
                bad "write/read $descr $shape --format $fmt --codec $c: $(cat err.txt)"
            fi
        done
    done
done
[ "$every" -gt 1 ] && echo "sampled: $ran of $n write/read round trips ran"

# ---- chunking, sharding and streaming in many slabs ----
# One-element chunks take a smaller array (41 x 23 x 5: 4715 chunk files, still 2 slabs to write and 4 to copy):
# the 22755 files of the others' 123 x 37 x 5 cost 6 s of CPU more in the Release build and 17 s under ASan.
mknpy in-big.npy "<u2" "(123, 37, 5)" 45510
mknpy in-small.npy "<u2" "(41, 23, 5)" 9430
for opts in "--chunks 10,10,5" "--chunks 7,37,5 --shards 21,37,5" "--chunks 1,1,1 --format 2" \
            "--chunks 16,8,4 --shards 32,16,4 --codec zstd+crc32c" "--chunks 200,1,9"; do
    rm -rf a.zarr b.zarr
    if [[ "$opts" == "--chunks 1,1,1 "* ]]; then cp in-small.npy in.npy; else cp in-big.npy in.npy; fi
    if ZGPU_CLI_SLAB_BYTES=5000 "$ZGPU" write a.zarr in.npy $opts 2> err.txt &&
       "$ZGPU" read a.zarr -o out.npy 2>> err.txt && same_data in.npy out.npy &&
       ZGPU_CLI_SLAB_BYTES=3000 "$ZGPU" cp a.zarr b.zarr --chunks 9,4,2 --shards none --codec gzip 2>> err.txt &&
       "$ZGPU" read b.zarr -o out2.npy 2>> err.txt && same_data in.npy out2.npy; then
        ok
    else
        bad "chunked write/cp $opts: $(cat err.txt)"
    fi
done

# ---- cp conversions keep data, fill value and attributes ----
mknpy in.npy "<f4" "(40, 30)" 4800
rm -rf src.zarr
expect_rc 0 "$ZGPU" write src.zarr in.npy --chunks 16,16 --shards 32,32 --codec blosc:lz4 --fill-value 2.5 --attrs '{"units": "m"}'
for opts in "" "--format 2" "--shards none" "--chunks 8,8" "--format 2 --codec zlib:2" "--shards 16,32 --chunks 16,8"; do
    rm -rf dst.zarr dst2.zarr
    if "$ZGPU" cp src.zarr dst.zarr $opts 2> err.txt && "$ZGPU" read dst.zarr -o out.npy 2>> err.txt &&
       same_data in.npy out.npy && "$ZGPU" info dst.zarr > info.txt 2>> err.txt &&
       grep -q '^fill_value: *2.5$' info.txt && grep -q '"units":"m"' info.txt &&
       "$ZGPU" cp dst.zarr dst2.zarr --format 3 2>> err.txt && "$ZGPU" read dst2.zarr -o out2.npy 2>> err.txt &&
       same_data in.npy out2.npy; then
        ok
    else
        bad "cp $opts: $(cat err.txt) $(cat info.txt 2>/dev/null)"
    fi
done

# ---- regions: an index keeps a length-1 axis; negative values count from the end ----
# (6, 4) uint8 holding 0..23
{
    dict="{'descr': '|u1', 'fortran_order': False, 'shape': (6, 4), }"
    printf '\x93NUMPY\x01\x00\x76\x00%s%*s\n' "$dict" $((0x76 - ${#dict} - 1)) ''
    for i in $(seq 0 23); do printf "\\x$(printf %02x "$i")"; done
} > seq.npy
rm -rf s.zarr
expect_rc 0 "$ZGPU" write s.zarr seq.npy --chunks 4,3
check_region() { # region expected-bytes(hex, space separated) expected-shape
    if "$ZGPU" read s.zarr --region "$1" -o r.npy 2> err.txt &&
       [ "$(npy_data r.npy | od -An -tx1 | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')" = "$2" ] &&
       grep -q "'shape': $3" r.npy; then
        ok
    else
        bad "region $1: $(npy_data r.npy | od -An -tx1) $(head -c 120 r.npy | tail -c +11) $(cat err.txt)"
    fi
}
check_region "1:3,2:" "06 07 0a 0b" "(2, 2)"
check_region "-1" "14 15 16 17" "(1, 4)"
check_region "-2:,-1" "13 17" "(2, 1)"
check_region ":,1:2" "01 05 09 0d 11 15" "(6, 1)"
check_region "5,3" "17" "(1, 1)"
check_region "2:2" "" "(0, 4)"
expect_rc 2 "$ZGPU" read s.zarr --region 6 -o r.npy
expect_rc 2 "$ZGPU" read s.zarr --region 0:7 -o r.npy
expect_rc 2 "$ZGPU" read s.zarr --region 0,0,0 -o r.npy
expect_rc 2 "$ZGPU" read s.zarr --region ::2 -o r.npy
expect_rc 0 "$ZGPU" read s.zarr -o /dev/null

# Fortran-order and big-endian input
{
    dict="{'descr': '>u2', 'fortran_order': True, 'shape': (2, 3), }"
    printf '\x93NUMPY\x01\x00\x76\x00%s%*s\n' "$dict" $((0x76 - ${#dict} - 1)) ''
    printf '\x00\x01\x00\x65\x00\x02\x00\x66\x00\x03\x00\x67'
} > fbe.npy
rm -rf f.zarr
expect_rc 0 "$ZGPU" write f.zarr fbe.npy
"$ZGPU" read f.zarr -o f.npy 2> err.txt
if [ "$(npy_data f.npy | od -An -tu2 | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')" = "1 2 3 101 102 103" ] &&
   grep -q "'descr': '<u2'" f.npy; then ok; else bad "fortran big-endian input: $(npy_data f.npy | od -An -tu2)"; fi

# ---- info, exit codes, error lines ----
expect_rc 0 "$ZGPU" info s.zarr
grep -q '^shape: *\[6, 4\]$' out.txt && grep -q '^chunk_shape: *\[4, 3\]$' out.txt && ok || bad "info: $(cat out.txt)"
expect_rc 0 "$ZGPU" info --json s.zarr
grep -q '"zarr_format": *3' out.txt && ok || bad "info --json: $(cat out.txt)"
expect_rc 0 "$ZGPU" --version
expect_rc 0 "$ZGPU" --help
for c in info read write cp bench; do expect_rc 0 "$ZGPU" "$c" --help; done
expect_rc 2 "$ZGPU"
expect_rc 2 "$ZGPU" frobnicate
expect_rc 2 "$ZGPU" read s.zarr
expect_rc 2 "$ZGPU" read s.zarr -o x.npy --bogus
expect_rc 1 "$ZGPU" info does-not-exist
[ "$(wc -l < err.txt)" -eq 1 ] && grep -q '^zgpu: error: ' err.txt && ok || bad "error line: $(cat err.txt)"
expect_rc 1 "$ZGPU" write s.zarr seq.npy            # exists
grep -q '^zgpu: error: ' err.txt && ok || bad "exists error: $(cat err.txt)"
expect_rc 0 "$ZGPU" write s.zarr seq.npy --overwrite
expect_rc 2 "$ZGPU" write t.zarr seq.npy --codec nope
expect_rc 2 "$ZGPU" write t.zarr seq.npy --format 2 --shards 2,2
expect_rc 2 "$ZGPU" write t.zarr seq.npy --chunks 2,3 --shards 3,3
expect_rc 2 "$ZGPU" write t.zarr seq.npy --attrs '[1]'
expect_rc 2 "$ZGPU" write t.zarr seq.npy --fill-value 300
expect_rc 1 "$ZGPU" write t.zarr missing.npy
printf 'junk' > junk.npy
expect_rc 1 "$ZGPU" write t.zarr junk.npy
expect_rc 2 "$ZGPU" cp s.zarr s.zarr
expect_rc 0 "$ZGPU" bench s.zarr --repeat 2
grep -q '^wall:' out.txt && grep -q '^stages:' out.txt && ok || bad "bench output: $(cat out.txt)"
expect_rc 2 "$ZGPU" bench s.zarr --repeat 0

# exit status 1 for runtime failures, 2 only for usage errors found before any work
expect_rc 2 "$ZGPU" read s.zarr -o r.npy --threads x
expect_rc 2 "$ZGPU" cp s.zarr t.zarr --threads -1
expect_rc 2 "$ZGPU" write t.zarr seq.npy --threads 5000
expect_rc 2 "$ZGPU" cp s.zarr t.zarr --bogus
expect_rc 1 "$ZGPU" cp missing.zarr t.zarr
expect_rc 1 "$ZGPU" read missing.zarr -o r.npy
expect_rc 1 "$ZGPU" bench missing.zarr
# a valid --threads whose threads cannot start (address space): a runtime failure, no usage hint. A sanitizer
# build cannot run under an address-space limit at all (its shadow memory): skipped there.
vlimit_cmds=("read s.zarr -o r.npy" "cp s.zarr t.zarr" "write t.zarr seq.npy" "bench s.zarr")
if [ "$( (ulimit -v 1000000; "$ZGPU" --version > /dev/null 2>&1; echo $?) 2> /dev/null)" != 0 ]; then
    echo "skipped: --threads under ulimit -v (this zgpu does not start under an address-space limit: sanitizer?)"
    vlimit_cmds=()
fi
for c in "${vlimit_cmds[@]}"; do
    (ulimit -v 1000000; "$ZGPU" $c --threads 1000) > out.txt 2> err.txt
    rc=$?
    if [ "$rc" -eq 1 ] && grep -q 'thread' err.txt && ! grep -q -- '--help' err.txt; then ok
    else bad "$c --threads 1000 under ulimit -v: rc $rc: $(cat err.txt)"; fi
done
[ ! -e t.zarr ] && ok || bad "a failed write left t.zarr"

# ---- cp --device: cpu is the host copy; a bad device is a usage error; without a GPU (CI) a clean failure that
# names the option and creates nothing (tests/cli/test_cli_gpu.sh copies through a GPU where there is one) ----
expect_rc 2 "$ZGPU" cp s.zarr t.zarr --device tpu:0
expect_rc 0 "$ZGPU" cp s.zarr tc.zarr --device cpu -q --codec gzip
"$ZGPU" read tc.zarr -o tc.npy 2> err.txt && "$ZGPU" read s.zarr -o sc.npy 2>> err.txt && same_data sc.npy tc.npy &&
    ok || bad "cp --device cpu: $(cat err.txt)"
"$ZGPU" cp s.zarr t.zarr --device cuda:99 > out.txt 2> err.txt
rc=$?
[ "$rc" -eq 1 ] && grep -q '^zgpu: error: --device cuda:99: ' err.txt && ! grep -q -- '--help' err.txt &&
    [ ! -e t.zarr ] && ok || bad "cp --device cuda:99: rc $rc: $(cat err.txt)"
"$ZGPU" read s.zarr -o /dev/null --device cuda:0 > /dev/null 2> probe.txt
if grep -q 'no GPU' probe.txt; then
    for lv in "" "--levels"; do
        "$ZGPU" cp s.zarr t.zarr --device cuda:0 $lv > out.txt 2> err.txt
        rc=$?
        if [ "$rc" -eq 1 ] && grep -q '^zgpu: error: --device cuda:0: no GPU: .*--device cpu copies on the host' err.txt &&
           [ "$(wc -l < err.txt)" -eq 1 ] && [ ! -e t.zarr ]; then ok
        else bad "cp --device cuda:0 $lv without a GPU: rc $rc: $(cat err.txt)"; fi
    done
else
    echo "skipped: cp --device without a GPU (there is one: tests/cli/test_cli_gpu.sh copies through it)"
fi
rm -rf tc.zarr

# ---- staged writes: DST appears complete or not at all; no hidden leftovers ----
rm -rf st && mkdir st
expect_rc 0 "$ZGPU" write st/a.zarr seq.npy --chunks 2,2
expect_rc 0 "$ZGPU" cp st/a.zarr st/b.zarr --chunks 3,1
grep -q '^zgpu: copied 8 chunks, 24 B in ' err.txt && ok || bad "cp summary: $(cat err.txt)"
expect_rc 0 "$ZGPU" cp st/a.zarr st/c.zarr --quiet --shards 6,4 --chunks 3,2
[ ! -s err.txt ] && ok || bad "cp --quiet printed: $(cat err.txt)"
# on a terminal (script(1) gives it one): a progress line redrawn in place, then the summary
if command -v script > /dev/null; then
    ZGPU_CLI_SLAB_BYTES=16 script -qc "'$ZGPU' cp st/a.zarr st/e.zarr --chunks 1,4" /dev/null > tty.txt 2>&1
    if grep -q $'\r\033\[Kcp: 0/6 chunks, 0 B/24 B' tty.txt &&
       grep -q $'\r\033\[Kzgpu: copied 6 chunks, 24 B in ' tty.txt; then ok; else bad "cp progress: $(cat -A tty.txt)"; fi
    rm -rf st/e.zarr
else
    echo "skipped: cp progress on a terminal (no script(1))"
fi
expect_rc 1 "$ZGPU" cp st/a.zarr st/b.zarr          # exists
expect_rc 0 "$ZGPU" cp st/c.zarr st/b.zarr --overwrite -q
"$ZGPU" info st/b.zarr > info.txt 2>&1 && grep -q '^shard_shape: *\[6, 4\]$' info.txt && ok || bad "cp --overwrite: $(cat info.txt)"
expect_rc 0 "$ZGPU" write st/a.zarr fbe.npy --overwrite
"$ZGPU" read st/a.zarr -o f2.npy 2> err.txt && same_data f.npy f2.npy && ok || bad "write --overwrite: $(cat err.txt)"
[ "$(ls -A st | tr '\n' ' ')" = "a.zarr b.zarr c.zarr " ] && ok || bad "leftovers in st: $(ls -A st)"
# a write that fails after it started (bad .npy data) leaves the old array and no stage
head -c 140 seq.npy > short.npy   # the header and half the data
expect_rc 1 "$ZGPU" write st/a.zarr short.npy --overwrite
"$ZGPU" read st/a.zarr -o f3.npy 2> err.txt && same_data f.npy f3.npy && ok || bad "failed overwrite lost data: $(cat err.txt)"
[ "$(ls -A st | tr '\n' ' ')" = "a.zarr b.zarr c.zarr " ] && ok || bad "leftovers after a failed write: $(ls -A st)"
# a non-empty directory without a Zarr node is replaced only with --overwrite
mkdir -p st/d.zarr && echo x > st/d.zarr/notes.txt
expect_rc 1 "$ZGPU" cp st/a.zarr st/d.zarr
[ -f st/d.zarr/notes.txt ] && ok || bad "cp without --overwrite touched a directory"
expect_rc 0 "$ZGPU" cp st/a.zarr st/d.zarr --overwrite -q
[ ! -e st/d.zarr/notes.txt ] && "$ZGPU" read st/d.zarr -o f4.npy 2> err.txt && same_data f.npy f4.npy && ok ||
    bad "cp --overwrite over a plain directory: $(cat err.txt)"

# ---- zgpu read streams in slabs: every slab size, region, layout and output form gives the reference's bytes ----
# References: numpy on the source .npy when .venv has it (all checks in one run at the end), else the read in one
# slab (the library's region read, checked above against the input).
PY="$HERE/../../.venv/bin/python"
"$PY" -c 'import numpy' 2> /dev/null || PY=""
refs=()  # "source.npy region out.npy" for numpy
# check_slabbed ARRAY SOURCE.npy REGION TAG [SLAB_BYTES...]: the read in one slab, then in slabs of each size (the
# default 1 777 5000) to a .npy, to stdout (a stream, written in order) and to /dev/null
check_slabbed() {
    local a=$1 src=$2 region=$3 tag=$4 ok=1 ra=() sizes=("${@:5}")
    [ ${#sizes[@]} -eq 0 ] && sizes=(1 777 5000)
    [ -n "$region" ] && ra=(--region "$region")
    "$ZGPU" read "$a" "${ra[@]}" -o "ref_$tag.npy" 2> err.txt || ok=0
    for sb in "${sizes[@]}"; do
        ZGPU_CLI_SLAB_BYTES=$sb "$ZGPU" read "$a" "${ra[@]}" -o "s_$tag.npy" 2>> err.txt && cmp -s "ref_$tag.npy" "s_$tag.npy" || ok=0
    done
    # (a stream's slabs are runs of the file: a budget under a row of chunks decodes chunks more than once)
    ZGPU_CLI_SLAB_BYTES=${sizes[-1]} "$ZGPU" read "$a" "${ra[@]}" -o - 2>> err.txt > "p_$tag.npy" &&
        cmp -s "ref_$tag.npy" "p_$tag.npy" || ok=0
    ZGPU_CLI_SLAB_BYTES=${sizes[1]:-1} "$ZGPU" read "$a" "${ra[@]}" -o /dev/null 2>> err.txt || ok=0
    [ "$ok" = 1 ] && ok || bad "slabbed read $tag ($a ${ra[*]}): $(cat err.txt)"
    refs+=("$src|$region|ref_$tag.npy")
}
mknpy in.npy "<u2" "(123, 37, 5)" 45510
k=0
for opts in "--chunks 10,10,5" "--chunks 7,37,5 --shards 21,37,5" "--chunks 16,8,4 --format 2" "--chunks 200,1,9" \
            "--chunks 4,4,2 --shards 8,8,4 --codec zstd+crc32c"; do
    rm -rf a.zarr
    "$ZGPU" write a.zarr in.npy $opts 2> err.txt || bad "write $opts: $(cat err.txt)"
    for region in "" "5:117,3:30,1:4" "-50:,10" "99:100,:,2:3"; do
        k=$((k + 1))
        check_slabbed a.zarr in.npy "$region" "$k"
    done
done
# chunks of 1 MiB decode in place, one call each (mode "chunks"), for whole-chunk selections; v2 and v3
mknpy big.npy "|u1" "(6, 1024, 1024)" 6291456 False half
for opts in "--chunks 2,512,1024 --codec lz4" "--chunks 2,1024,512 --codec zstd --format 2"; do
    rm -rf m.zarr
    "$ZGPU" write m.zarr big.npy $opts 2> err.txt || bad "write $opts: $(cat err.txt)"
    for sb in 1 1500000 3000000 ""; do  # "": the memory model's slabs
        if env ${sb:+ZGPU_CLI_SLAB_BYTES=$sb} "$ZGPU" read m.zarr -o mo.npy -v 2> err.txt && same_data big.npy mo.npy &&
           grep -q ' decode threads\?, chunks$' err.txt; then ok; else bad "read in chunks $opts slab $sb: $(cat err.txt)"; fi
    done
    k=$((k + 1))
    check_slabbed m.zarr big.npy "1:5,100:-3,7:1000" "$k" 1 1500000 3000000
done
if [ -n "$PY" ]; then
    "$PY" - "${refs[@]}" > py.txt 2>&1 <<'PYEOF'
import sys
import numpy as np
bad = 0
for spec in sys.argv[1:]:
    src, region, out = spec.split("|")
    a = np.load(src)
    sel = []
    for axis, e in enumerate(region.split(",") if region else []):
        if ":" in e:
            lo, hi = e.split(":")
            sel.append(slice(int(lo) if lo else None, int(hi) if hi else None))
        else:
            i = int(e)
            sel.append(slice(i, i + 1 if i != -1 else None))
    want, got = a[tuple(sel)], np.load(out)
    if want.shape != got.shape or want.dtype != got.dtype or want.tobytes() != got.tobytes():
        bad += 1
        print(f"{out}: differs from {src}[{region}]: {got.shape} {got.dtype} vs {want.shape} {want.dtype}")
print(f"{len(sys.argv) - 1} checked, {bad} differ")
sys.exit(1 if bad else 0)
PYEOF
    [ $? -eq 0 ] && ok || bad "slabbed reads against numpy: $(cat py.txt)"
else
    echo "skipped: numpy references (no .venv); slabbed reads compared with one-slab reads only"
fi

# a failed read leaves the destination as it was (or absent) and no temporary beside it
rm -rf bad.zarr out && mkdir out
expect_rc 0 "$ZGPU" write bad.zarr in.npy --chunks 10,10,5
printf 'not zstd' > bad.zarr/c/3/1/0
printf 'keep' > out/keep.npy
for dest in out/new.npy out/keep.npy; do
    ZGPU_CLI_SLAB_BYTES=777 "$ZGPU" read bad.zarr -o "$dest" > out.txt 2> err.txt
    rc=$?
    if [ "$rc" -eq 1 ] && [ "$(wc -l < err.txt)" -eq 1 ] && grep -q "c/3/1/0" err.txt; then ok; else bad "corrupt read to $dest: rc $rc: $(cat err.txt)"; fi
done
[ "$(ls -A out | tr '\n' ' ')" = "keep.npy " ] && [ "$(cat out/keep.npy)" = keep ] && ok || bad "a failed read left: $(ls -A out)"
expect_rc 1 "$ZGPU" read s.zarr -o no-such-dir/x.npy
grep -q "no-such-dir/x.npy: cannot create" err.txt && ok || bad "read into a missing directory: $(cat err.txt)"
# peak memory stays bounded whatever the array's size (tests/cli/test_cli_memory.sh: arrays of 1.6 GB)
if bash "$HERE/test_cli_memory.sh" "$ZGPU" > mem.txt 2>&1; then ok; cat mem.txt; else bad "memory: $(cat mem.txt)"; fi

echo "$pass passed, $fail failed ($ran of $n write/read combinations)"
[ "$fail" -eq 0 ]
