#!/usr/bin/env bash
# Prepares what a run on the GPU machine needs but cannot install there (it has no package registry):
#   .gpudeps/  Debian 12 builds of the compression libraries and their headers (extracted .debs)
#   .nvcomp/   libnvcomp.so.6 from the pinned nvidia-libnvcomp-cu13 wheel in .venv
#   .whl/      wheels for Python 3.12 that the GPU benchmark needs (tensorstore, ml_dtypes; zarr-python and
#              its runtime dependencies: numcodecs, donfig, pyyaml, google-crc32c, packaging, typing_extensions;
#              numpy is the machine's own)
#   .whl-remote/ wheels for scripts/gpu/remote.sh (remote-store tests and benchmark): zarr-python, moto's S3
#              server, boto3, s3fs with aiobotocore and aiohttp, fsspec (tensorstore and pytest are the machine's;
#              libcurl and libcrypto too)
#   .whl-eco/  issue 21's GPU tests and bench_ecosystem.py: zarr-python, xarray, Dask, dask-cuda
#   .whl-tiff/, .whl-gdal/, .whl-nvimg/  issue 22's (scripts/gpu/tiff.sh): tifffile + imagecodecs, rasterio (GDAL),
#              nvImageCodec + nvTIFF unpacked
#   shared/    a copy of ../shared/bench (the benchmark volumes' generator)
# All are git-ignored through .git/info/exclude. Then, with the device tool:
#   run  command: bash scripts/gpu/run.sh [bench args]   carry: [".gpudeps", ".nvcomp", ".whl", "shared"]
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
bash scripts/install-deps.sh
for p in /.gpudeps/ /.nvcomp/ /.whl/ /.whl-remote/ /.whl-eco/ /.whl-tiff/ /.whl-gdal/ /.whl-nvimg/ /shared/; do
    grep -qxF "$p" .git/info/exclude 2>/dev/null || echo "$p" >> .git/info/exclude
done

rm -rf .gpudeps && mkdir -p .gpudeps/debs
(cd .gpudeps/debs && apt-get download -q \
    libzstd-dev libzstd1 liblz4-dev liblz4-1 libdeflate-dev libdeflate0 libblosc-dev libblosc1 \
    libsnappy1v5 libbz2-dev libbz2-1.0 zlib1g-dev zlib1g \
    liblzma-dev liblzma5 libjpeg62-turbo-dev libjpeg62-turbo)
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
# the remote tests and benchmark (scripts/gpu/remote.sh): zarr-python as above, moto's S3 server, boto3, s3fs;
# tensorstore and pytest are the machine's own (the carry is limited to 64 MiB)
rm -rf .whl-remote && .venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl-remote \
    zarr==3.1.6 numcodecs==0.16.6 donfig==0.8.1.post1 pyyaml==6.0.3 google-crc32c==1.9.0 \
    packaging==26.3 typing_extensions==4.16.0 \
    moto==5.2.5 Flask==3.1.3 flask-cors==6.0.5 Werkzeug==3.1.9 Jinja2==3.1.6 MarkupSafe==3.0.4 itsdangerous==2.2.0 \
    click==8.5.1 blinker==1.9.0 boto3==1.43.117 botocore==1.43.117 s3transfer==0.19.3 jmespath==1.1.0 \
    python-dateutil==2.9.0.post0 six==1.17.0 urllib3==2.8.0 requests==2.34.2 charset-normalizer==3.5.3 idna==3.20 \
    certifi==2026.10.19.post1 xmltodict==1.0.4 responses==0.26.3 cryptography==50.0.2 cffi==2.1.1 pycparser==3.12 \
    py-partiql-parser==0.6.3 s3fs==2026.9.0 aiobotocore==3.10.0 aiohttp==3.14.5 aiohappyeyeballs==2.7.1 \
    aioitertools==0.13.0 aiosignal==1.4.0 attrs==26.1.0 frozenlist==1.8.0 multidict==7.2.1 propcache==0.5.4 \
    yarl==1.25.1 wrapt==2.5.2 fsspec==2026.9.0

# issue 21's GPU tests and bench/bench_ecosystem.py (WHL=.whl-eco bash scripts/gpu/train.sh): zarr-python, xarray,
# pandas, Dask with distributed and dask-cuda (whose rapids-dask-dependency pins dask 2026.7.1), cuda-core; about
# 43 MiB, so carried without .nvcomp and .whl
rm -rf .whl-eco && .venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl-eco \
    zarr==3.1.6 numcodecs==0.16.6 donfig==0.8.1.post1 pyyaml==6.0.3 google-crc32c==1.9.0 ml_dtypes==0.6.0 \
    packaging==26.3 typing_extensions==4.16.0 xarray==2026.9.0 pandas==3.1.1 python-dateutil==2.9.0.post0 six==1.17.0 \
    tzdata==2026.6 dask==2026.7.1 distributed==2026.7.1 dask-cuda==26.10.0 rapids-dask-dependency==26.10.0 \
    cuda-core==1.2.2 cuda-bindings==13.5.0 cuda-pathfinder==1.9.1 nvidia-ml-py==13.615.71 cloudpickle==3.1.3 \
    fsspec==2026.9.0 partd==1.4.2 locket==1.0.0 toolz==1.2.0 click==8.5.1 importlib-metadata==10.2.0 zipp==4.1.2 \
    msgpack==1.2.4 psutil==7.2.2 sortedcontainers==2.4.0 tblib==3.2.2 tornado==6.6.1 zict==3.0.0 jinja2==3.1.6 \
    markupsafe==3.0.4

# issue 22's GPU tests and bench/bench_tiff.py (scripts/gpu/tiff.sh): tifffile with imagecodecs (.whl-tiff), rasterio
# with GDAL (.whl-gdal; the two do not fit one call together), and nvImageCodec with nvTIFF unpacked into .whl-nvimg,
# only what reads TIFF kept (its other Python versions' modules and other codecs' extensions would pass the limit)
TIFF_PLATFORMS="--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
    --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
rm -rf .whl-tiff .whl-gdal .whl-nvimg
# shellcheck disable=SC2086
.venv/bin/python -m pip download -q --no-deps $TIFF_PLATFORMS -d .whl-tiff tifffile==2026.3.3 imagecodecs==2026.3.6
# shellcheck disable=SC2086
.venv/bin/python -m pip download -q --no-deps $TIFF_PLATFORMS -d .whl-gdal rasterio==1.4.4 affine==3.0.1 \
    click-plugins==1.1.1.2 cligj==0.7.2 pyparsing==3.3.3 click==8.5.1 attrs==26.1.0 certifi==2026.10.19.post1
mkdir -p .whl-nvimg/wheels
# shellcheck disable=SC2086
.venv/bin/python -m pip download -q --no-deps $TIFF_PLATFORMS -d .whl-nvimg/wheels nvidia-nvimgcodec-cu13==0.9.0.20 \
    nvidia-nvtiff-cu13==0.8.0.82
(cd .whl-nvimg && for w in wheels/*.whl; do python3 -m zipfile -e "$w" .; done && rm -rf wheels &&
    find . -name 'nvimgcodec_impl.cpython-*' ! -name '*cpython-312-*' -delete &&
    find nvidia/nvimgcodec/extensions -name '*.so*' ! -name 'libnvtiff_ext*' ! -name 'libtiff_ext*' -delete)

rm -rf shared && mkdir -p shared && cp -r ../shared/bench shared/
du -sh .gpudeps .nvcomp .whl .whl-remote .whl-eco .whl-tiff .whl-gdal .whl-nvimg shared
