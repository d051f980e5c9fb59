#!/usr/bin/env bash
# On the GPU machine: the hostile-input suite (tests/hostile) in device mode: every case read on the host and into
# GPU memory (CuPy), the device checked against the host (same outcome class, never accepting what the host
# rejects, equal values, bombs' GPU memory bounded), then a sample of it again under compute-sanitizer memcheck.
# Counts per family and path go to $OUT/hostile-device.json (and hostile-sanitizer.json), logs to $OUT/hostile-*.log.
# It needs numpy, cupy and pytest (the machine's own); no zarr-python or numcodecs: the cases are written by zgpu
# itself and the standard library. Carry as for run.sh. One device command may run 10 minutes, so in two calls:
#   MODE=full SAN=0 bash scripts/gpu/hostile.sh        every case, host and device
#   SUITE=0 REUSE=1 bash scripts/gpu/hostile.sh        the memcheck sample (SAN_K: a pytest -k expression)
# MODE=fast runs the subset of `make test`. The library is built in $B (fresh unless REUSE=1 and it is there).
set -o pipefail
R=$PWD D=$PWD/.gpudeps B=${B:-/tmp/zgpu-build-hostile} OUT=${OUT:-/tmp/zgpu-out} MODE=${MODE:-full}
mkdir -p "$OUT"
export ZGPU_NVCOMP_LIB=$R/.nvcomp LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi -L
if [ "${REUSE:-0}" != 1 ] || [ ! -f $B/lib/libzgpu.so ]; then
    rm -rf $B   # a warm machine keeps /tmp: never reuse a cache configured from other carried files
    cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON -DZGPU_CUDA_ARCHS=native -DCMAKE_PREFIX_PATH=$D/usr \
        -DCMAKE_INCLUDE_PATH=$D/usr/include -DCMAKE_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu;$D/lib/x86_64-linux-gnu" \
        > $OUT/cmake.log 2>&1 || { tail -30 $OUT/cmake.log; exit 1; }
    cmake --build $B -j16 --target zgpu > $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -30; exit 1; }
fi
export ZGPU_LIB=$B/lib/libzgpu.so PYTHONPATH=$R/python:${PYTHONPATH:-} ZGPU_HOSTILE_DEVICE=${ZGPU_HOSTILE_DEVICE:-cuda:0}
[ "$MODE" = full ] && export ZGPU_HOSTILE=full
python3 -c "import zgpu, cupy; print('zgpu', zgpu.library_path(), 'gpu', zgpu.gpu_available(), 'cupy', cupy.__version__)"

# the whole suite (or the fast subset), host and device
if [ "${SUITE:-1}" != 0 ]; then
t0=$(date +%s)
ZGPU_HOSTILE_JSON=$OUT/hostile-device.json timeout ${SUITE_TIMEOUT:-540} python3 -m pytest -q -p no:cacheprovider \
    tests/hostile -rfE > $OUT/hostile-device.log 2>&1
echo "hostile suite ($MODE, device $ZGPU_HOSTILE_DEVICE) rc=$? in $(( $(date +%s) - t0 )) s: $(tail -1 $OUT/hostile-device.log)"
sed -n '/cases per family/,/^=====/p' $OUT/hostile-device.log | head -14
grep -E "^FAILED|^XPASS" $OUT/hostile-device.log | head -40
fi

# a sample under compute-sanitizer (memcheck is ~100x slower): damaged chunks of the formats with GPU decoders,
# blosc header lies and shard index tricks; child processes (FIFOs, bombs) are checked too (--target-processes all)
[ "${SAN:-1}" = 0 ] && exit 0
SAN_K=${SAN_K:-"chunk/v3-zstd/ or chunk/v3-gzip/ or chunk/v2-zlib/ or chunk/v3-blosc-lz4-shuffle/ or chunk/v3-blosc-zlib-shuffle/ or chunk/v3-shard-zstd/ or blosc/v2-blosc-zstd-2/ or shard/v3-shard-zstd/ or memory"}
t0=$(date +%s)
ZGPU_HOSTILE= ZGPU_HOSTILE_JSON=$OUT/hostile-sanitizer.json timeout ${SAN_TIMEOUT:-300} compute-sanitizer --tool memcheck \
    --leak-check no --target-processes all --kernel-name-exclude kns=nvcomp \
    python3 -m pytest -q -p no:cacheprovider tests/hostile -k "$SAN_K" > $OUT/hostile-sanitizer.log 2>&1
echo "hostile sample under memcheck rc=$? in $(( $(date +%s) - t0 )) s: $(grep -E 'passed|failed' $OUT/hostile-sanitizer.log | tail -1)"
grep -E "ERROR SUMMARY" $OUT/hostile-sanitizer.log | sort | uniq -c
