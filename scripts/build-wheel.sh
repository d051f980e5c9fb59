#!/usr/bin/env bash
# Builds zgpu's CPU wheel for pip: `make wheel` (WHEEL_DIR, default dist/).
#   - libzgpu.so and the zgpu command built without CUDA (a wheel that works where no CUDA exists; the CUDA
#     variants are plugin wheels: `make wheel-cuda`, scripts/build-wheel-cuda.sh);
#   - a py3-none wheel (the package loads the library through ctypes: one wheel for every Python 3);
#   - auditwheel repair: the compression, HTTP and TLS libraries bundled (zgpu.libs/), the tag manylinux_2_X.
# With --test, a fresh venv (build-wheel/venv) installs it with the pinned test packages, and python/tests run
# against it from a directory outside the checkout (`make test-wheel`).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${WHEEL_DIR:-$ROOT/dist}
WORK=$ROOT/build-wheel
bash "$ROOT/scripts/install-deps.sh"
rm -rf "$WORK/raw" && mkdir -p "$WORK/raw" "$OUT"
(cd "$ROOT" && ZGPU_CMAKE_ARGS="-DZGPU_CUDA=OFF" ZGPU_BUILD_DIR="$WORK/cmake" \
    .venv/bin/pip wheel -q --no-build-isolation --no-deps -w "$WORK/raw" ./python)
PATH="$ROOT/.venv/bin:$PATH" "$ROOT/.venv/bin/auditwheel" repair -w "$OUT" "$WORK"/raw/zgpu-*.whl
WHEEL=$(ls -t "$OUT"/zgpu-*manylinux*.whl | head -1)
echo "wheel: $WHEEL"
[ "${1:-}" = --test ] || exit 0
PY=$(readlink -f "$ROOT/.venv/bin/python")
rm -rf "$WORK/venv" "$WORK/tests" && "$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q --disable-pip-version-check -r "$ROOT/requirements-dev.txt"
"$WORK/venv/bin/pip" install -q --disable-pip-version-check "$WHEEL"
cp -r "$ROOT/python/tests" "$WORK/tests"
cd "$WORK" && env -u PYTHONPATH -u ZGPU_LIB "$WORK/venv/bin/python" -c \
    'import zgpu; print("zgpu", zgpu.__version__, "from", zgpu.library_path())'
env -u PYTHONPATH -u ZGPU_LIB "$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider "$WORK/tests"
