#!/usr/bin/env bash
# On the GPU machine: a quick look at zgpu's DEFLATE decoder alone: build, test_gpu_inflate (batch, damaged
# streams, throughput), the gzip/zlib arrays of test_gpu_read, and memcheck on test_gpu_inflate (quick).
# Usage: [READ=0] [MEMCHECK=0] [VARIANTS="NL:SEG[:BLOCKS_PER_SM] ..."] bash scripts/gpu/inflate-check.sh   (logs in $OUT)
set -o pipefail
R=$PWD D=$PWD/.gpudeps B=/tmp/zgpu-build OUT=${OUT:-/tmp/zgpu-out}
mkdir -p "$OUT"
export ZGPU_NVCOMP_LIB=$R/.nvcomp LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi -L
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON -DCMAKE_PREFIX_PATH=$D/usr \
    -DCMAKE_INCLUDE_PATH=$D/usr/include -DCMAKE_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu;$D/lib/x86_64-linux-gnu" \
    > $OUT/cmake.log 2>&1 || { tail -30 $OUT/cmake.log; exit 1; }
cmake --build $B -j16 --target test_gpu_inflate test_gpu_read zgpu_cli > $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -30; exit 1; }
(cd $B && timeout 200 ./bin/test_gpu_inflate > $OUT/inflate.log 2>&1; echo "inflate rc=$? $(tail -1 $OUT/inflate.log)"; grep -E "throughput|profile|damaged|valid|CHECK|stream" $OUT/inflate.log | head -30)
[ "${READ:-1}" = 1 ] && (cd $B && timeout 200 ./bin/test_gpu_read > $OUT/read.log 2>&1; echo "read rc=$? $(tail -1 $OUT/read.log)"; grep -E "gzip|zlib|CHECK" $OUT/read.log | head -30)
[ "${MEMCHECK:-1}" = 1 ] && (cd $B && ZGPU_TEST_QUICK=1 timeout 150 compute-sanitizer --tool memcheck --leak-check no ./bin/test_gpu_inflate > $OUT/san_inflate.log 2>&1;
 echo "memcheck inflate rc=$? $(grep 'ERROR SUMMARY' $OUT/san_inflate.log)"; grep -m5 -A5 "Invalid\|Error" $OUT/san_inflate.log | head -30)
# the decoder's shape: lanes per stream x bits per lane, blocks an SM holds (VARIANTS="NL:SEG[:BPS] ..."), test
# binaries built alone
for v in ${VARIANTS:-}; do
    IFS=: read -r nl seg bps <<< "$v"; bps=${bps:-1} tag=${nl}_${seg}_${bps}
    nvcc -O3 -arch=sm_90 -DZGPU_HAVE_CUDA=1 -DZI_NL=$nl -DZI_SEG_BITS=$seg -DZI_BLOCKS_PER_SM=$bps -Isrc -Iinclude \
        -Itests/unit -I$D/usr/include --expt-relaxed-constexpr tests/unit/test_gpu_inflate.c src/gpucodec/deflate/inflate_kernels.cu \
        -L$D/usr/lib/x86_64-linux-gnu -lz -ldeflate -o /tmp/inflate_$tag > $OUT/variant_$tag.log 2>&1 ||
        { tail -5 $OUT/variant_$tag.log; continue; }
    /tmp/inflate_$tag >> $OUT/variant_$tag.log 2>&1
    echo "variant $nl x $seg, $bps a SM: $(tail -1 $OUT/variant_$tag.log)"; grep -E "throughput|profile|GB/s" $OUT/variant_$tag.log
done
