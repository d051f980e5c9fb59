#!/usr/bin/env bash
# Builds zgpu's CUDA plugin wheel, zgpu-cuda13 or zgpu-cuda12 (what `pip install zgpu[cu13]` / `zgpu[cu12]` pulls
# in; docs/install.md): `make wheel-cuda CUDA=13|12` (WHEEL_DIR, default dist/).
#   - libzgpu.so and the zgpu command built with CUDA for every current GPU (cmake/cuda.cmake's default set: SASS
#     for sm_75 to sm_120, PTX of the newest), linked against libcudart.so.N (ZGPU_CUDART=shared) with no path of
#     this machine compiled in (ZGPU_RELOCATABLE);
#   - CUDA 13: the toolkit at $CUDA13_HOME (default /usr/local/cuda). CUDA 12: scripts/cuda12-toolkit.sh
#     assembles one from PyPI's CUDA 12 wheels (see there for what they lack), or $CUDA12_HOME names a full one;
#   - auditwheel repair: the compression, HTTP and TLS libraries bundled (zgpu_cudaN.libs/), the CUDA runtime
#     excluded (--exclude), as are NVRTC and nvCOMP (opened with dlopen): the nvidia-* wheels or the system give them;
#   - checks: the library needs libcudart.so.N, the wheel holds no CUDA library, SASS for sm_90 and PTX are there.
# With --test, also the CPU wheel (scripts/build-wheel.sh), then a fresh venv (build-wheel-cuN/venv) installs
# zgpu[cuN] from the two wheels, the nvidia-* wheels at the pins of python/cuda/constraints-cuN.txt, and the test
# packages, and python/tests run against it from outside the checkout (`make test-wheel-cuda CUDA=N`; GPU tests
# skip on a machine without one).
set -euo pipefail
TEST=0
[ "${1:-}" = --test ] && { TEST=1; shift; }
MAJOR=${1:-13}
case "$MAJOR" in 12|13) ;; *) echo "usage: $0 [--test] 12|13" >&2; exit 2 ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${WHEEL_DIR:-$ROOT/dist}
WORK=$ROOT/build-wheel-cu$MAJOR
PY=$ROOT/.venv/bin/python
bash "$ROOT/scripts/install-deps.sh"
mkdir -p "$WORK" "$OUT"
T0=$SECONDS

if [ "$MAJOR" = 13 ]; then
    TOOLKIT=${CUDA13_HOME:-/usr/local/cuda}
else
    TOOLKIT=${CUDA12_HOME:-$(bash "$ROOT/scripts/cuda12-toolkit.sh" "$WORK/toolkit")}
fi
NVCC=$TOOLKIT/bin/nvcc
[ -x "$NVCC" ] || { echo "no nvcc at $NVCC (set CUDA${MAJOR}_HOME)" >&2; exit 1; }
# the runtime's headers say which CUDA the library is built for (the hybrid CUDA 12 toolkit's nvcc is CUDA 13's)
HDR=/dev/null
for h in "$TOOLKIT"/include/cuda_runtime_api.h "$TOOLKIT"/targets/x86_64-linux/include/cuda_runtime_api.h; do
    [ -f "$h" ] && HDR=$h && break
done
CUDART_VERSION=$(sed -n 's/^#define CUDART_VERSION *\([0-9]*\).*/\1/p' "$HDR")
[ "$((${CUDART_VERSION:-0} / 1000))" = "$MAJOR" ] || { echo "$TOOLKIT is not CUDA $MAJOR (CUDART_VERSION ${CUDART_VERSION:-?})" >&2; exit 1; }
# CUDA 12: fatbinary images uncompressed (CUDA 13's fatbinary may use a compression older CUDA 12 drivers lack)
CUDA_FLAGS=""
[ "$MAJOR" = 12 ] && CUDA_FLAGS="--no-compress"

# The library: every current GPU (ZGPU_CUDA_ARCHS empty), the shared CUDA runtime, no build-machine paths.
cmake -S "$ROOT" -B "$WORK/cmake" -DCMAKE_BUILD_TYPE=Release -DZGPU_CUDA=ON -DZGPU_CUDA_ARCHS= \
    -DCMAKE_CUDA_COMPILER="$NVCC" -DCUDAToolkit_ROOT="$TOOLKIT" -DZGPU_CUDART=shared \
    -DCMAKE_CUDA_RUNTIME_LIBRARY=Shared -DZGPU_RELOCATABLE=ON "-DCMAKE_CUDA_FLAGS=$CUDA_FLAGS" \
    ${ZGPU_CMAKE_ARGS:-} >"$WORK/cmake.log"
cmake --build "$WORK/cmake" --target zgpu zgpu_cli -j"${JOBS:-$(nproc)}"
LIB=$WORK/cmake/lib/libzgpu.so
T1=$SECONDS

rm -rf "$WORK/raw" "$WORK/setuptools" && mkdir -p "$WORK/raw"
(cd "$ROOT" && ZGPU_CUDA_MAJOR=$MAJOR ZGPU_PREBUILT_LIB=$LIB ZGPU_BUILD_BASE=$WORK/setuptools \
    "$ROOT/.venv/bin/pip" wheel -q --no-build-isolation --no-deps -w "$WORK/raw" ./python/cuda)
# The CUDA libraries stay out of the wheel: NVIDIA's wheels (or the system) provide them, in versions that match
# the driver, and bundling them would add 200 MB. libcuda.so.1 is the driver's own.
PATH="$ROOT/.venv/bin:$PATH" "$ROOT/.venv/bin/auditwheel" repair -w "$OUT" \
    --exclude "libcudart.so.$MAJOR" --exclude "libnvrtc.so.$MAJOR" --exclude libnvcomp.so.6 --exclude libcuda.so.1 \
    "$WORK"/raw/zgpu_cuda"$MAJOR"-*.whl
WHEEL=$(ls -t "$OUT"/zgpu_cuda"$MAJOR"-*manylinux*.whl | head -1)

# Checks on what was packaged, with cuobjdump from PyPI (the toolkits here lack it; it reads both variants' fatbins)
CUOBJDUMP=$ROOT/build-wheel-cuda/tools/nvidia/cu13/bin/cuobjdump
[ -x "$CUOBJDUMP" ] || "$ROOT/.venv/bin/pip" install -q --disable-pip-version-check --no-deps \
    --target "$ROOT/build-wheel-cuda/tools" nvidia-cuda-cuobjdump==13.2.51
CHK=$WORK/check && rm -rf "$CHK" && mkdir -p "$CHK" && (cd "$CHK" && unzip -q "$WHEEL")
PLIB=$CHK/zgpu_cuda$MAJOR/_lib/libzgpu.so
readelf -d "$PLIB" | grep -q "NEEDED.*\[libcudart\.so\.$MAJOR\]" \
    || { echo "FAIL: $PLIB does not need libcudart.so.$MAJOR"; readelf -d "$PLIB" | grep NEEDED; exit 1; }
if unzip -l "$WHEEL" | grep -E "lib(cudart|nvrtc|nvcomp|cuda)[.-]"; then echo "FAIL: CUDA libraries bundled"; exit 1; fi
SASS=$("$CUOBJDUMP" --list-elf "$PLIB" | grep -o 'sm_[0-9]*' | sort -u | tr '\n' ' ')
PTX=$("$CUOBJDUMP" --list-ptx "$PLIB" | grep -o 'sm_[0-9]*' | sort -u | tr '\n' ' ')
echo "$SASS" | grep -qw sm_90 || { echo "FAIL: no sm_90 SASS in $PLIB (has: $SASS)"; exit 1; }
[ -n "$PTX" ] || { echo "FAIL: no PTX in $PLIB"; exit 1; }
echo "checks: needs libcudart.so.$MAJOR; no CUDA library bundled; SASS: $SASS; PTX: $PTX"
echo "wheel: $WHEEL ($(du -m "$WHEEL" | cut -f1) MB; library built in $((T1 - T0)) s)"
[ "$TEST" = 1 ] || exit 0

# ---- the test: zgpu[cuN] into a fresh venv, as a user installs it ----
bash "$ROOT/scripts/build-wheel.sh"
VERSION=$("$PY" -c 'import ast,sys; print(next(ast.literal_eval(n.value) for n in ast.parse(open(sys.argv[1]).read()).body
    if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__version__" for t in n.targets)))' \
    "$ROOT/python/zgpu/__init__.py")
BASE=$(ls -t "$OUT"/zgpu-"$VERSION"-*manylinux*.whl | head -1)
rm -rf "$WORK/venv" "$WORK/tests" && "$(readlink -f "$PY")" -m venv "$WORK/venv"
VPIP=("$WORK/venv/bin/pip" install -q --disable-pip-version-check)
# the test packages, less requirements-dev's nvCOMP (the extra brings the variant's own)
grep -v '^nvidia-' "$ROOT/requirements-dev.txt" >"$WORK/requirements-test.txt"
"${VPIP[@]}" -r "$WORK/requirements-test.txt"
# the local wheels by path (PyPI's index is not asked for zgpu), the extra's nvidia-* wheels from PyPI, pinned
"${VPIP[@]}" -c "$ROOT/python/cuda/constraints-cu$MAJOR.txt" "$BASE[cu$MAJOR]" "$WHEEL"
cp -r "$ROOT/python/tests" "$WORK/tests"
cd "$WORK"
env -u PYTHONPATH -u ZGPU_LIB -u ZGPU_NVCOMP_LIB -u LD_LIBRARY_PATH "$WORK/venv/bin/python" - "$MAJOR" <<'EOF'
import sys, zgpu, zgpu._capi as c
major = sys.argv[1]
print("zgpu", zgpu.__version__, "from", zgpu.library_path(), "; GPU:", zgpu.gpu_available())
assert "/zgpu_cuda%s/_lib/" % major in zgpu.library_path(), "the CUDA plugin's library was not loaded"
loaded = c.PLUGIN.preload()
print("CUDA libraries from the nvidia-* wheels:", loaded)
assert {"cudart", "nvrtc", "nvcomp"} <= set(loaded), loaded
EOF
env -u PYTHONPATH -u ZGPU_LIB -u ZGPU_NVCOMP_LIB -u LD_LIBRARY_PATH "$WORK/venv/bin/zgpu" --version
env -u PYTHONPATH -u ZGPU_LIB -u ZGPU_NVCOMP_LIB -u LD_LIBRARY_PATH "$WORK/venv/bin/python" -m pytest -q \
    -p no:cacheprovider "$WORK/tests"
