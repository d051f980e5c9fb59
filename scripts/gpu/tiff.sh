#!/usr/bin/env bash
# On the GPU machine: tiled TIFF into GPU memory (issue 22). Builds the library (CUDA), runs the TIFF and LZW tests
# (ctest's tiff / lzw / packbits programs, test_gpu_lzw under compute-sanitizer memcheck, tests/tiff with its GPU
# cases) and the benchmark (bench/bench_tiff.py; its arguments after --). Logs go to $OUT.
#   STEPS=tests | bench | all (default)      REUSE=1 keeps this machine's build (/tmp/zgpu-build, as train.sh's)
# Carry: [".gpudeps", "shared", ".whl-tiff"] (tifffile + imagecodecs: the tests' reference reader and the
# benchmark's files and tifffile column), plus ".whl-nvimg" (nvImageCodec with nvTIFF, an unpacked tree) for that
# column; or ".whl-gdal" (rasterio) instead of ".whl-tiff" for the GDAL column and GDAL's COG: the two do not fit
# one call's 64 MiB. scripts/gpu/prepare-carry.sh makes them. The benchmark's files stay in /dev/shm/zgpu-tiff
# while the machine is warm, so a second call (the other column) reads the same files.
set -o pipefail
R=$PWD D=$PWD/.gpudeps B=${B:-/tmp/zgpu-build} OUT=${OUT:-/tmp/zgpu-out} STEPS=${STEPS:-all}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
SITE=/tmp/site-tiff
rm -rf $SITE && mkdir -p $SITE
for w in .whl-tiff .whl-gdal; do
    [ -d $w ] && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $SITE $w/*.whl
done
export PYTHONPATH=$SITE:$R/python
if [ -d .whl-nvimg ]; then
    export PYTHONPATH=$PYTHONPATH:$R/.whl-nvimg LD_LIBRARY_PATH=$R/.whl-nvimg/nvidia/nvtiff/lib:$LD_LIBRARY_PATH
fi
nvidia-smi -L
if [ "${REUSE:-0}" != 1 ] || [ ! -f $B/lib/libzgpu.so ]; then
    rm -rf $B
    t0=$(date +%s)
    cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON -DZGPU_CUDA_ARCHS=native -DCMAKE_PREFIX_PATH=$D/usr \
        -DCMAKE_INCLUDE_PATH=$D/usr/include -DCMAKE_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu;$D/lib/x86_64-linux-gnu" \
        > $OUT/cmake.log 2>&1 || { tail -30 $OUT/cmake.log; exit 1; }
    cmake --build $B -j16 > $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -30; exit 1; }
    echo "built in $(( $(date +%s) - t0 )) s"
fi
export ZGPU_LIB=$B/lib/libzgpu.so ZGPU_CLI=$B/bin/zgpu ZGPU_CACHE_DIR=/tmp/zgpu-cache-tests
python3 -c "import zgpu; print('zgpu gpu', zgpu.gpu_available())"
if [ "$STEPS" != bench ]; then
    (cd $B && timeout 300 ctest -j8 --output-on-failure -R "tiff|lzw|packbits" > $OUT/ctest-tiff.log 2>&1;
     echo "ctest tiff rc=$? $(grep -E 'tests passed' $OUT/ctest-tiff.log)"; grep -E "\*\*\*Failed|Timeout" $OUT/ctest-tiff.log | head)
    for t in test_gpu_lzw; do
        [ -x $B/bin/$t ] || continue
        (cd $B && timeout 240 compute-sanitizer --tool memcheck --leak-check no ./bin/$t > $OUT/san_$t.log 2>&1;
         echo "memcheck $t rc=$? $(grep 'ERROR SUMMARY' $OUT/san_$t.log)")
    done
    timeout 400 python3 -m pytest -q -p no:cacheprovider -rfEs tests/tiff > $OUT/pytest-tiff.log 2>&1
    echo "tests/tiff rc=$? $(tail -1 $OUT/pytest-tiff.log)"; grep -E "^FAILED|^ERROR|^SKIPPED" $OUT/pytest-tiff.log | head -20
fi
[ "$STEPS" = tests ] && exit 0
[ "${1:-}" = -- ] && shift
PYTHONUNBUFFERED=1 timeout ${BENCH_TIMEOUT:-500} python3 bench/bench_tiff.py --lib $B/lib/libzgpu.so --data /dev/shm/zgpu-tiff \
    "$@" 2>&1 | tee $OUT/bench-tiff.log | tail -60
