STEPS=bench bash scripts/gpu/run.sh --volumes labels_u32,oct_u16 --layouts gzip --repeat 3 --no-docs --no-zarr-python > /dev/null 2>&1
grep -E "^  (labels|oct)" $OUT/bench.log | cut -c1-250
B=/tmp/zgpu-build; export ZGPU_NVCOMP_LIB=$PWD/.nvcomp LD_LIBRARY_PATH=$PWD/.gpudeps/usr/lib/x86_64-linux-gnu:$PWD/.gpudeps/lib/x86_64-linux-gnu
for d in zgpu host; do echo "== $d"; ZGPU_TRACE=1 ZGPU_DEFLATE_DECODER=$d $B/bin/zgpu bench /tmp/zgpu-bench-data/labels_u32.gzip.zgpu.zarr --device cuda:0 --repeat 5 2>&1 | grep -E "rror|parts each|decoded:|stages" | sort | uniq | head -5; done
ZGPU_INFLATE_TIMES=1 ZGPU_DEFLATE_DECODER=zgpu $B/bin/zgpu bench /tmp/zgpu-bench-data/labels_u32.gzip.zgpu.zarr --device cuda:0 --repeat 1 2>&1 | grep "zgpu inflate" | tail -2
python3 -c "
import sys; sys.path.insert(0, 'shared/bench'); import datasets
datasets.make('labels_u32', planes=64)[:, 256:512, 256:512].copy().tofile('/tmp/labels_u32.raw')"
cd $B && ZGPU_INFLATE_SAMPLE=/tmp/labels_u32.raw ./bin/test_gpu_inflate > $OUT/inflate.log 2>&1; echo "inflate rc=$?"; grep -E "CHECK|sample|throughput|valid|damaged|passed" $OUT/inflate.log | head -20
timeout 200 ./bin/test_gpu_read > $OUT/read.log 2>&1; echo "read rc=$? $(tail -1 $OUT/read.log)"
