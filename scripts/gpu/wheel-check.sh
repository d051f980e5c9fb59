#!/usr/bin/env bash
# A CUDA wheel on a GPU: zgpu + zgpu-cuda13 (or -cuda12) and NVIDIA's CUDA runtime (and nvCOMP) wheels installed into
# a fresh venv with no package index, then python/tests/test_gpu.py against them (docs/install.md).
#
# Here (a machine with the package registries):  bash scripts/gpu/wheel-check.sh prepare [13|12]
#   builds the CPU and CUDA wheels from this tree (make wheel, make wheel-cuda CUDA=N; incremental) and puts them in
#   .whl-cuda13/ (or .whl-cuda12/, git-ignored) with NVIDIA's wheels at the pins of python/cuda/constraints-cuN.txt:
#     13: nvidia-cuda-runtime + nvidia-libnvcomp-cu13: about 58 MiB in all;
#     12: nvidia-cuda-runtime-cu12 only (nvidia-libnvcomp-cu12 is 41 MiB): about 31 MiB; nvCOMP is then absent and
#         the GPU tests use zgpu's own decoders.
#   NVRTC's wheel (86 MiB) is left out: the GPU machine's CUDA 13 toolkit has libnvrtc.so.13 (/usr/local/cuda/lib64),
#   which zgpu falls back to, so that fallback is tested too. (The CUDA 12 build runs there too: a CUDA 13 driver
#   runs CUDA 12 programs.)
# There, with the device tool:
#   run  command: bash scripts/gpu/wheel-check.sh 13   carry: [".whl-cuda13"]     (or 12 and .whl-cuda12)
# It uses the machine's python3 (3.12) with its site packages visible (numpy, pytest, CuPy, PyTorch: the GPU tests
# use them), but zgpu only from the carried wheels; nothing from the checkout but python/tests. Logs go to $OUT.
set -euo pipefail
cd "$(dirname "$0")/../.."
PREPARE=0
[ "${1:-}" = prepare ] && { PREPARE=1; shift; }
MAJOR=${1:-13}
case "$MAJOR" in 12|13) ;; *) echo "usage: $0 [prepare] [13|12]" >&2; exit 2 ;; esac
CARRY=.whl-cuda$MAJOR

if [ "$PREPARE" = 1 ]; then
    grep -qxF "/$CARRY/" .git/info/exclude 2>/dev/null || echo "/$CARRY/" >> .git/info/exclude
    VERSION=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' python/zgpu/__init__.py)
    # both from this tree, always: zgpu's bindings must find every function they bind in the plugin's library
    bash scripts/build-wheel.sh
    bash scripts/build-wheel-cuda.sh "$MAJOR"
    rm -rf "$CARRY" && mkdir -p "$CARRY"
    cp "$(ls -t dist/zgpu-"$VERSION"-*manylinux*.whl | head -1)" \
       "$(ls -t dist/zgpu_cuda"$MAJOR"-"$VERSION"-*manylinux*.whl | head -1)" "$CARRY/"
    WANT='^nvidia-(cuda-runtime|libnvcomp)'
    [ "$MAJOR" = 12 ] && WANT='^nvidia-cuda-runtime'
    .venv/bin/python -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$CARRY" \
        $(grep -E "$WANT" python/cuda/constraints-cu"$MAJOR".txt)
    ls -l "$CARRY"
    du -sh --apparent-size "$CARRY"
    exit 0
fi

OUT=${OUT:-/tmp/zgpu-out} V=/tmp/zgpu-wheel-venv T=/tmp/zgpu-wheel-tests
mkdir -p "$OUT"
ls "$CARRY"/zgpu_cuda"$MAJOR"-*.whl >/dev/null || { echo "no $CARRY/: run 'bash scripts/gpu/wheel-check.sh prepare $MAJOR' here first"; exit 1; }
nvidia-smi -L || true
rm -rf "$V" "$T"
# a venv that sees the machine's packages (numpy, pytest, CuPy, PyTorch) but whose zgpu is the wheels'; Ubuntu's
# python3 may lack ensurepip, so pip comes from the system (pip --python) when the venv has none
python3 -m venv --system-site-packages "$V" 2>/dev/null || python3 -m venv --system-site-packages --without-pip "$V"
# (the machine's python3 may itself be a venv, whose packages --system-site-packages does not reach: a .pth adds them)
python3 -c 'import site; print("\n".join(site.getsitepackages()))' > "$(echo "$V"/lib/python3*/site-packages)/machine.pth"
if "$V/bin/python" -m pip --version >/dev/null 2>&1; then PIP=("$V/bin/python" -m pip); else PIP=(python3 -m pip --python "$V/bin/python"); fi
# --no-deps: the extra's NVRTC wheel (and for 12 nvCOMP's) is not carried: the system's libnvrtc.so.13 serves
"${PIP[@]}" install -q --no-index --no-deps --no-compile --disable-pip-version-check "$CARRY"/*.whl
cp -r python/tests "$T"
cd "$T"
env -u PYTHONPATH -u ZGPU_LIB -u ZGPU_NVCOMP_LIB -u LD_LIBRARY_PATH "$V/bin/python" - "$MAJOR" <<'EOF' 2>&1 | tee "$OUT/wheel-check-cu$MAJOR.log"
import sys, zgpu, zgpu._capi as c
major = sys.argv[1]
print("zgpu", zgpu.__version__, "library", zgpu.library_path())
print("from the nvidia wheels:", c.PLUGIN.preload() if c.PLUGIN else None)
print("GPU available:", zgpu.gpu_available(), "driver CUDA", c._driver_cuda_version())
assert "/zgpu_cuda%s/_lib/" % major in zgpu.library_path(), "the CUDA %s plugin was not loaded" % major
assert zgpu.gpu_available(), "the CUDA %s wheel sees no GPU" % major
EOF
env -u PYTHONPATH -u ZGPU_LIB -u ZGPU_NVCOMP_LIB -u LD_LIBRARY_PATH "$V/bin/zgpu" --version | tee -a "$OUT/wheel-check-cu$MAJOR.log"
set +e
env -u PYTHONPATH -u ZGPU_LIB -u ZGPU_NVCOMP_LIB -u LD_LIBRARY_PATH "$V/bin/python" -m pytest -q -p no:cacheprovider \
    -rs test_gpu.py > "$OUT/wheel-pytest-cu$MAJOR.log" 2>&1
rc=$?
tail -15 "$OUT/wheel-pytest-cu$MAJOR.log"
echo "test_gpu.py against the CUDA $MAJOR wheel: rc=$rc"
exit $rc
