#!/usr/bin/env bash
# Assembles the CUDA 12 compiler that scripts/build-wheel-cuda.sh builds zgpu-cuda12 with, in DIR (default
# build-wheel-cu12/toolkit), from PyPI's CUDA 12.9 wheels and this machine's CUDA 13 toolkit; prints DIR.
#
# Why a hybrid: PyPI's nvidia-cuda-nvcc-cu12 holds ptxas, libnvvm, libdevice and the crt/ headers, but not the
# compiler driver nor its front end (nvcc, cudafe++, cicc, fatbinary, nvlink): a CUDA 12 nvcc exists only in
# NVIDIA's toolkit installers, which this machine cannot reach. So the C++ front end is CUDA 13's (nvcc, cudafe++,
# cicc, fatbinary), and everything the product depends on is CUDA 12.9's:
#   - device code: cicc writes PTX, which ptxas of 12.9 assembles into the SASS (cubins of ELF ABI 7, toolkit 12.9,
#     as a 12.9 build's; CUDA 13's ABI 8 cubins do not load under a CUDA 12 driver). cicc 13 marks its PTX as
#     ISA 9.0: the ptxas wrapper below marks it 8.8 (12.9's), for ptxas and for the PTX kept in the fatbinary; an
#     instruction that 8.8 lacks would stop ptxas, so what assembles is valid 12.9 PTX;
#   - headers and runtime: cuda_runtime.h & co. and libcudart.so.12 of 12.9 (nvidia-cuda-runtime-cu12), except
#     crt/host_runtime.h, CUDA 13's, which matches the launch stubs cudafe++ 13 writes (its __cudaLaunch takes a
#     second argument; the functions of libcudart it calls are the same);
#   - the fatbinary's images are left uncompressed (--no-compress, scripts/build-wheel-cuda.sh), which every CUDA 12
#     driver reads.
# The pins are below; the wheels go to DIR/pypi (pip install --target), the CUDA 13 tools are linked from
# $CUDA13_HOME (default /usr/local/cuda). With a real CUDA 12 toolkit, set CUDA12_HOME instead of using this.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$(realpath -m "${1:-$ROOT/build-wheel-cu12/toolkit}")
CUDA13=${CUDA13_HOME:-/usr/local/cuda}
PINS=(nvidia-cuda-nvcc-cu12==12.9.86 nvidia-cuda-runtime-cu12==12.9.79)
STAMP="$DIR/.stamp"
WANT="${PINS[*]} $(sha256sum "$0" | cut -c1-16) $(readlink -f "$CUDA13")"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then echo "$DIR"; exit 0; fi

for t in nvcc cudafe++ fatbinary nvlink bin2c; do
    [ -x "$CUDA13/bin/$t" ] || { echo "cuda12-toolkit: no $CUDA13/bin/$t (a CUDA 13 toolkit; set CUDA13_HOME)" >&2; exit 1; }
done
[ -x "$CUDA13/nvvm/bin/cicc" ] || { echo "cuda12-toolkit: no $CUDA13/nvvm/bin/cicc" >&2; exit 1; }
rm -rf "$DIR" && mkdir -p "$DIR"/{bin,nvvm/bin,include/cccl,lib64}
"$ROOT/.venv/bin/pip" install -q --disable-pip-version-check --no-deps --target "$DIR/pypi" "${PINS[@]}" >&2
P=$DIR/pypi/nvidia

# nvcc finds its tools beside itself and reads nvcc.profile there: a copy (not a link, which it would follow back to
# CUDA 13's profile), the other CUDA 13 tools linked
cp "$CUDA13/bin/nvcc" "$DIR/bin/nvcc"
for t in cudafe++ fatbinary nvlink bin2c; do ln -s "$(readlink -f "$CUDA13/bin/$t")" "$DIR/bin/$t"; done
ln -s "$(readlink -f "$CUDA13/bin/crt")" "$DIR/bin/crt"  # device-link stubs (CMake's compiler check links one)
ln -s "$(readlink -f "$CUDA13/nvvm/bin/cicc")" "$DIR/nvvm/bin/cicc"
ln -s "$P/cuda_nvcc/nvvm/libdevice" "$DIR/nvvm/libdevice"
cp -rs "$P/cuda_runtime/include/." "$DIR/include/"
cp -rs "$P/cuda_nvcc/include/." "$DIR/include/"
ln -sf "$(readlink -f "$CUDA13/include/crt/host_runtime.h")" "$DIR/include/crt/host_runtime.h"
for f in libcudart.so.12 libcudart_static.a libcudadevrt.a libculibos.a; do ln -s "$P/cuda_runtime/lib/$f" "$DIR/lib64/$f"; done
ln -s libcudart.so.12 "$DIR/lib64/libcudart.so"
cat >"$DIR/bin/nvcc.profile" <<'EOF'
# scripts/cuda12-toolkit.sh: CUDA 12.9's headers and runtime below this directory
TOP              = $(_HERE_)/..
CICC_PATH        = $(TOP)/nvvm/bin
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH            += $(CICC_PATH):$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
SYSTEM_INCLUDES +=  "-isystem" "$(TOP)/include/cccl" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
EOF
cat >"$DIR/bin/ptxas" <<EOF
#!/usr/bin/env bash
# CUDA 12.9's ptxas on cicc 13's PTX, its ISA version marked 8.8 (scripts/cuda12-toolkit.sh says why)
for a in "\$@"; do case "\$a" in *.ptx) sed -i 's/^\.version 9\.[0-9]*\$/.version 8.8/' "\$a" ;; esac; done
exec "$P/cuda_nvcc/bin/ptxas" "\$@"
EOF
chmod +x "$DIR/bin/ptxas"
echo "$WANT" >"$STAMP"
echo "cuda12-toolkit: $DIR (CUDA 12.9 headers, runtime and ptxas; CUDA 13 front end)" >&2
echo "$DIR"
