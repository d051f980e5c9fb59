# Shared by the CLI test scripts (sourced): finds the zgpu binary (argument 1, default build/bin/zgpu), moves
# into a temporary working folder removed on exit, counts checks, and writes .npy inputs.
ZGPU="${1:-build/bin/zgpu}"
ZGPU="$(cd "$(dirname "$ZGPU")" && pwd)/$(basename "$ZGPU")"
[ -x "$ZGPU" ] || { echo "no zgpu binary at $ZGPU"; exit 1; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# mknpy OUT DESCR SHAPE NBYTES [FORTRAN [DATA]]: a v1.0 .npy with NBYTES data bytes. DATA "random" (default):
# all random; "half": half random, half zeros, so every codec has something to compress.
mknpy() {
    local out=$1 descr=$2 shape=$3 nbytes=$4 fortran=${5:-False} data=${6:-random}
    local dict="{'descr': '$descr', 'fortran_order': $fortran, 'shape': $shape, }"
    local total=$(( (10 + ${#dict} + 1 + 63) / 64 * 64 ))
    local hlen=$(( total - 10 ))
    {
        printf '\x93NUMPY\x01\x00'
        printf "\\x$(printf %02x $((hlen & 255)))\\x$(printf %02x $((hlen >> 8)))"
        printf '%s' "$dict"
        printf '%*s' $(( hlen - ${#dict} - 1 )) ''
        printf '\n'
        if [ "$data" = half ]; then
            head -c "$((nbytes / 2))" /dev/urandom
            head -c "$((nbytes - nbytes / 2))" /dev/zero
        else
            head -c "$nbytes" /dev/urandom
        fi
    } > "$out"
}
