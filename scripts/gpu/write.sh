#!/usr/bin/env bash
# On the GPU machine: device writes (issue 24). Builds the library (CUDA) into /tmp/zgpu-build, runs test_gpu_write
# (every codec chain of tests/unit/codec_cases.h written from device memory, read back), its trace (which chains the
# GPU encoder takes), python/tests/test_gpu.py -k write (zarr-python reads the device-written arrays back),
# tests/cli/test_cli_gpu.sh (`zgpu read --device`, `zgpu cp --device` compared element-wise with the source), and a
# first timing of whole writes of a 128 MB volume from device and from host memory. MEMCHECK=1: test_gpu_write under
# compute-sanitizer; ALL=1: test_gpu_encode and test_gpu_read too. Carry [".gpudeps", ".nvcomp", ".whl-py"].
set -o pipefail
R=$PWD D=$PWD/.gpudeps B=/tmp/zgpu-build OUT=${OUT:-/tmp/zgpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu:$D/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-} ZGPU_NVCOMP_LIB=$R/.nvcomp
t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON -DZGPU_CUDA_ARCHS=native -DCMAKE_PREFIX_PATH=$D/usr \
    -DCMAKE_INCLUDE_PATH=$D/usr/include -DCMAKE_LIBRARY_PATH="$D/usr/lib/x86_64-linux-gnu;$D/lib/x86_64-linux-gnu" > $OUT/cmake.log 2>&1 || { tail -20 $OUT/cmake.log; exit 1; }
cmake --build $B -j16 > $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -30; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
cd $B
timeout 90 ./bin/test_gpu_write > $OUT/write.log 2>&1; echo "test_gpu_write rc=$? $(tail -1 $OUT/write.log)"; grep -m12 "CHECK failed" $OUT/write.log
ZGPU_TRACE=1 timeout 60 ./bin/test_gpu_write 2>&1 | grep "device write" | sort | uniq -c | head -20
if [ "${MEMCHECK:-0}" = 1 ]; then
    timeout 200 compute-sanitizer --tool memcheck --leak-check no ./bin/test_gpu_write > $OUT/san_write.log 2>&1; echo "memcheck write rc=$? $(grep 'ERROR SUMMARY' $OUT/san_write.log)"; grep -m3 -A8 "Invalid\|Program hit" $OUT/san_write.log | head -30
fi
if [ "${ALL:-0}" = 1 ]; then
    timeout 100 ./bin/test_gpu_encode > $OUT/encode.log 2>&1; echo "test_gpu_encode rc=$? $(tail -1 $OUT/encode.log)"
fi
if [ "${ALL:-0}" = 1 ]; then
    timeout 200 ./bin/test_gpu_read > $OUT/read.log 2>&1; echo "test_gpu_read rc=$? $(tail -1 $OUT/read.log)"
fi
cd $R
mkdir -p /tmp/site && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl-py/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$R/python ZGPU_LIB=$B/lib/libzgpu.so
timeout 150 python3 -m pytest -q -p no:cacheprovider python/tests/test_gpu.py -x -k "write" 2>&1 | tail -15
timeout 300 bash tests/cli/test_cli_gpu.sh $B/bin/zgpu > $OUT/cli_gpu.log 2>&1; echo "test_cli_gpu.sh (read and cp --device) rc=$? $(tail -1 $OUT/cli_gpu.log)"; grep -E -m12 "FAIL|skipped|zarr-python" $OUT/cli_gpu.log
timeout 100 python3 - <<'PY'
import time, numpy as np, cupy, zgpu, shutil
shape=(64,1024,1024)
x=(np.arange(np.prod(shape),dtype=np.uint64).reshape(shape)//9 % 3000).astype("uint16")
x+= (np.random.default_rng(0).integers(0,4,size=shape)).astype("uint16")
d=cupy.asarray(x)
for comp in ["zstd", "gzip", "blosc", None]:
    for how in ["device","host"]:
        ts=[]
        for r in range(3):
            p="/dev/shm/wb"; shutil.rmtree(p, ignore_errors=True)
            a=zgpu.create(p, shape=shape, dtype="uint16", chunks=(1,512,512), compressors=comp, fill_value=0)
            cupy.cuda.Device().synchronize(); t=time.perf_counter()
            if how=="device": a[...]=d
            else: a[...]=x
            ts.append(time.perf_counter()-t)
        import os
        sz=sum(os.path.getsize(os.path.join(dp,f)) for dp,_,fs in os.walk(p) for f in fs)
        print(f"write {comp} from {how}: {sorted(ts)[1]*1e3:.1f} ms, {x.nbytes/sorted(ts)[1]/1e9:.2f} GB/s, ratio {x.nbytes/sz:.2f}")
PY
