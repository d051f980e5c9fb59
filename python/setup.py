"""Builds libzgpu.so with CMake from the repository root (the parent of this directory) and packages it
inside the wheel as zgpu/_lib/libzgpu.so.

pip >= 21.3 builds a local directory in place, so `pip install ./python` (run from the repository root)
sees ../CMakeLists.txt. Environment knobs:
  ZGPU_CMAKE_ARGS   extra arguments for the CMake configure step (e.g. "-DZGPU_CUDA=OFF")
  ZGPU_BUILD_DIR    build directory (default: python/build/cmake)
  ZGPU_PREBUILT_LIB use this libzgpu.so instead of building one (the `zgpu` command is then taken from ../bin/
                    beside it, where there is one)
  CMAKE_BUILD_PARALLEL_LEVEL  parallel build jobs (default: the number of CPUs, at most 8)
"""
import glob
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _fail(msg: str) -> None:
    sys.stderr.write("\nzgpu: %s\n\n" % msg)
    raise SystemExit(1)


def build_library() -> str:
    """Configures and builds the `zgpu` shared library target; returns the path of libzgpu.so."""
    prebuilt = os.environ.get("ZGPU_PREBUILT_LIB")
    if prebuilt:
        if not os.path.isfile(prebuilt):
            _fail("ZGPU_PREBUILT_LIB=%s does not exist" % prebuilt)
        return prebuilt
    if not os.path.isfile(os.path.join(REPO, "CMakeLists.txt")):
        _fail("cannot find the C sources: %s has no CMakeLists.txt. Build from a checkout of the zgpu "
              "repository (pip install ./python, pip >= 21.3), or set ZGPU_PREBUILT_LIB=/path/to/libzgpu.so."
              % REPO)
    cmake = shutil.which("cmake")
    if cmake is None:
        _fail("CMake >= 3.20 is needed to build libzgpu (apt-get install cmake, or pip install cmake). "
              "The C dependencies come from scripts/install-deps.sh.")
    build_dir = os.environ.get("ZGPU_BUILD_DIR", os.path.join(HERE, "build", "cmake"))
    configure = [cmake, "-S", REPO, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DZGPU_CUDA=AUTO"]
    configure += shlex.split(os.environ.get("ZGPU_CMAKE_ARGS", ""))
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(min(8, os.cpu_count() or 1))
    build = [cmake, "--build", build_dir, "--target", "zgpu", "zgpu_cli", "-j", jobs]
    for cmd in (configure, build):
        print("zgpu: running", " ".join(shlex.quote(c) for c in cmd), flush=True)
        try:
            subprocess.run(cmd, check=True)
        except subprocess.CalledProcessError as e:
            _fail("`%s` failed with exit status %d (see the output above). Missing C libraries (zstd, lz4, "
                  "libdeflate, blosc, zlib, bzip2) are installed by scripts/install-deps.sh."
                  % (" ".join(cmd[:2]), e.returncode))
    libs = sorted(glob.glob(os.path.join(build_dir, "lib", "libzgpu.so*")))
    if not libs:
        _fail("the build finished but produced no %s/lib/libzgpu.so" % build_dir)
    return os.path.join(build_dir, "lib", "libzgpu.so")


class BuildPyWithLib(build_py):
    """build_py that also builds the C library and copies it to zgpu/_lib/ in the build tree."""

    def run(self) -> None:
        super().run()
        src = os.path.realpath(build_library())
        dest_dir = os.path.join(self.build_lib, "zgpu", "_lib")
        os.makedirs(dest_dir, exist_ok=True)
        shutil.copyfile(src, os.path.join(dest_dir, "libzgpu.so"))
        # the `zgpu` command (statically linked against libzgpu), run by the console script zgpu._cli:main
        cli = os.path.join(os.path.dirname(os.path.dirname(src)), "bin", "zgpu")
        if os.path.isfile(cli):
            bin_dir = os.path.join(self.build_lib, "zgpu", "_bin")
            os.makedirs(bin_dir, exist_ok=True)
            shutil.copyfile(cli, os.path.join(bin_dir, "zgpu"))
            os.chmod(os.path.join(bin_dir, "zgpu"), 0o755)
        else:
            print("zgpu: no command-line tool at %s: the `zgpu` console script will say so" % cli, flush=True)
        # An editable install (pip install -e) imports zgpu from this directory; zgpu/_capi.py then finds
        # the library in python/build/cmake/lib/ without a copy in the source tree.


class BinaryDistribution(Distribution):
    """The wheel holds a native library: give it a platform tag."""

    def has_ext_modules(self) -> bool:
        return True


try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # (setuptools < 70.1)
    from wheel.bdist_wheel import bdist_wheel


class BdistWheelAnyPython(bdist_wheel):
    """The package loads libzgpu through ctypes, with no extension module: one wheel serves every Python 3 of the
    platform (py3-none-<platform>; scripts/build-wheel.sh makes it manylinux)."""

    def get_tag(self):
        return ("py3", "none", super().get_tag()[2])


def zgpu_version() -> str:
    """zgpu.__version__, read from zgpu/__init__.py without importing the package (which loads the library)."""
    import ast
    with open(os.path.join(HERE, "zgpu", "__init__.py")) as f:
        for node in ast.parse(f.read()).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
                return ast.literal_eval(node.value)
    _fail("no __version__ in zgpu/__init__.py")


# The CUDA variants are plugin wheels (python/cuda/, scripts/build-wheel-cuda.sh) holding libzgpu built with CUDA 12 or
# 13, each pulling the CUDA runtime, NVRTC and nvCOMP wheels from PyPI; zgpu loads the plugin's library in place of
# its own (docs/install.md). Pinned to this very version: the library must match the package's bindings.
EXTRAS = {
    "test": ["pytest", "zarr>=3", "numcodecs"],
    "xarray": ["xarray", "dask[array]"],
    "dask": ["dask[array]"],
    "cu12": ["zgpu-cuda12==%s" % zgpu_version()],
    "cu13": ["zgpu-cuda13==%s" % zgpu_version()],
}

setup(cmdclass={"build_py": BuildPyWithLib, "bdist_wheel": BdistWheelAnyPython}, distclass=BinaryDistribution,
      extras_require=EXTRAS)
