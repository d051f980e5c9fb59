#!/usr/bin/env bash
# Prepares what a run on the GPU machine needs but cannot install there (it has no package registry):
#   .gpudeps/  Debian 12 builds of the compression libraries and their headers (extracted .debs)
#   .nvcomp/   libnvcomp.so.6 from the pinned nvidia-libnvcomp-cu13 wheel in .venv
#   .whl/      wheels for Python 3.12 that the GPU benchmark needs (tensorstore, ml_dtypes; zarr-python and
#              its runtime dependencies: numcodecs, donfig, pyyaml, google-crc32c, packaging, typing_extensions;
#              numpy is the machine's own)
#   shared/    a copy of ../shared/bench (the benchmark volumes' generator)
# All four are git-ignored through .git/info/exclude. Then, with the device tool:
#   run  command: bash scripts/gpu/run.sh [bench args]   carry: [".gpudeps", ".nvcomp", ".whl", "shared"]
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
bash scripts/install-deps.sh
for p in /.gpudeps/ /.nvcomp/ /.whl/ /shared/; do
    grep -qxF "$p" .git/info/exclude 2>/dev/null || echo "$p" >> .git/info/exclude
done

rm -rf .gpudeps && mkdir -p .gpudeps/debs
(cd .gpudeps/debs && apt-get download -q \
    libzstd-dev libzstd1 liblz4-dev liblz4-1 libdeflate-dev libdeflate0 libblosc-dev libblosc1 \
    libsnappy1v5 libbz2-dev libbz2-1.0 zlib1g-dev zlib1g)
for d in .gpudeps/debs/*.deb; do dpkg -x "$d" .gpudeps; done
rm -rf .gpudeps/debs .gpudeps/usr/share
# shared libraries only (a static libz.a is not position-independent), and symlinks that stay inside
# .gpudeps (Debian's libz.so points at an absolute /lib path that is not there on the GPU machine)
find .gpudeps -name '*.a' -delete
find .gpudeps -type l | while read -r l; do
    t=$(readlink "$l")
    case "$t" in /*) ln -sfn "$(realpath --relative-to="$(dirname "$l")" ".gpudeps$t")" "$l" ;; esac
done

rm -rf .nvcomp && mkdir -p .nvcomp
cp .venv/lib/python3*/site-packages/nvidia/libnvcomp/lib64/libnvcomp.so.6 .nvcomp/

rm -rf .whl && .venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
    tensorstore==0.1.86 ml_dtypes==0.6.0 \
    zarr==3.1.6 numcodecs==0.16.6 donfig==0.8.1.post1 pyyaml==6.0.3 google-crc32c==1.9.0 \
    packaging==26.3 typing_extensions==4.16.0

rm -rf shared && mkdir -p shared && cp -r ../shared/bench shared/
du -sh .gpudeps .nvcomp .whl shared
