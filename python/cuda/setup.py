"""Builds the zgpu-cudaN plugin wheel around a libzgpu.so built with CUDA N (scripts/build-wheel-cuda.sh).

Environment:
  ZGPU_CUDA_MAJOR   12 or 13: the distribution zgpu-cudaN, the import package zgpu_cudaN, its nvidia-* dependencies
  ZGPU_PREBUILT_LIB the CUDA build's libzgpu.so; the `zgpu` command is taken from ../bin/ beside it
  ZGPU_BUILD_BASE   setuptools' build directory (default python/cuda/build/cuN): one per variant, so that a
                    build of one never packages what a build of the other left there
The package holds the library (zgpu_cudaN/_lib), the command (zgpu_cudaN/_bin) and the code that finds the CUDA
runtime, NVRTC and nvCOMP from the nvidia-* wheels (zgpu_cudaN/__init__.py); zgpu's own package loads it.
"""
import ast
import os
import shutil
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))

# The CUDA libraries each variant runs with, from PyPI (or the system's, when these are not installed). Ranges,
# not pins: any release of the same CUDA major version works (CUDA's minor version compatibility); the tests and
# the GPU machine's carry use the constraints-cuN.txt pins beside this file.
NVIDIA_DEPS = {
    12: ["nvidia-cuda-runtime-cu12>=12.8,<13", "nvidia-cuda-nvrtc-cu12>=12.8,<13", "nvidia-libnvcomp-cu12>=6,<7"],
    13: ["nvidia-cuda-runtime>=13.0,<14", "nvidia-cuda-nvrtc>=13.0,<14", "nvidia-libnvcomp-cu13>=6,<7"],
}


def _fail(msg):
    sys.stderr.write("\nzgpu-cuda: %s\n\n" % msg)
    raise SystemExit(1)


def zgpu_version():
    """zgpu.__version__ read from ../zgpu/__init__.py without importing it: the plugin's version is zgpu's."""
    with open(os.path.join(HERE, "..", "zgpu", "__init__.py")) as f:
        for node in ast.parse(f.read()).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
                return ast.literal_eval(node.value)
    _fail("no __version__ in python/zgpu/__init__.py")


MAJOR = int(os.environ.get("ZGPU_CUDA_MAJOR") or 0)
if MAJOR not in NVIDIA_DEPS:
    _fail("set ZGPU_CUDA_MAJOR to one of %s (scripts/build-wheel-cuda.sh does)" % sorted(NVIDIA_DEPS))
LIB = os.environ.get("ZGPU_PREBUILT_LIB", "")
if not os.path.isfile(LIB):
    _fail("set ZGPU_PREBUILT_LIB to a libzgpu.so built with CUDA %d (got %r)" % (MAJOR, LIB))
PKG = "zgpu_cuda%d" % MAJOR
VERSION = zgpu_version()
BUILD_BASE = os.environ.get("ZGPU_BUILD_BASE") or os.path.join(HERE, "build", "cu%d" % MAJOR)


class BuildPyWithLib(build_py):
    """build_py that adds the library, the command and _version.py to the package in the build tree."""

    def run(self):
        super().run()
        pkg = os.path.join(self.build_lib, PKG)
        os.makedirs(os.path.join(pkg, "_lib"), exist_ok=True)
        shutil.copyfile(os.path.realpath(LIB), os.path.join(pkg, "_lib", "libzgpu.so"))
        cli = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(LIB))), "bin", "zgpu")
        if os.path.isfile(cli):
            os.makedirs(os.path.join(pkg, "_bin"), exist_ok=True)
            shutil.copyfile(cli, os.path.join(pkg, "_bin", "zgpu"))
            os.chmod(os.path.join(pkg, "_bin", "zgpu"), 0o755)
        with open(os.path.join(pkg, "_version.py"), "w") as f:
            f.write("# written by python/cuda/setup.py\n__version__ = %r\nCUDA_MAJOR = %d\n" % (VERSION, MAJOR))


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # (setuptools < 70.1)
    from wheel.bdist_wheel import bdist_wheel


class BdistWheelAnyPython(bdist_wheel):
    """ctypes, no extension module: py3-none-<platform>, made manylinux by auditwheel (as zgpu's own wheel)."""

    def get_tag(self):
        return ("py3", "none", super().get_tag()[2])


setup(
    name="zgpu-cuda%d" % MAJOR,
    version=VERSION,
    description="zgpu's library built with CUDA %d: installed by `pip install zgpu[cu%d]`" % (MAJOR, MAJOR),
    long_description="The CUDA %d build of libzgpu for the `zgpu` package (GPU decoding, reads into device "
                     "memory). Install it as `pip install zgpu[cu%d]`; see zgpu's docs/install.md." % (MAJOR, MAJOR),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.9",
    packages=[PKG],
    package_dir={PKG: "zgpu_cuda"},
    install_requires=["zgpu==%s" % VERSION] + NVIDIA_DEPS[MAJOR],
    classifiers=["Programming Language :: Python :: 3", "Operating System :: POSIX :: Linux",
                 "Environment :: GPU :: NVIDIA CUDA"],
    cmdclass={"build_py": BuildPyWithLib, "bdist_wheel": BdistWheelAnyPython},
    distclass=BinaryDistribution,
    zip_safe=False,
    options={"build": {"build_base": BUILD_BASE}, "egg_info": {"egg_base": BUILD_BASE}},
)
