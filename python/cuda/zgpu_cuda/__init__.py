"""zgpu's library built with CUDA: the zgpu-cuda12 / zgpu-cuda13 plugin that `pip install zgpu[cu12]` or
`zgpu[cu13]` installs. zgpu (zgpu/_capi.py) loads this package's libzgpu.so instead of its own CPU build.

The library is linked against libcudart.so.N and opens NVRTC and nvCOMP with dlopen; none of them is bundled. They
come from the nvidia-* wheels this package depends on (site-packages/nvidia/...), or from the system when those are
absent. A wheel's library directory is not on the loader's search path, so preload() opens them by full path first:
the dynamic loader then satisfies libzgpu's libcudart.so.N and its dlopen of libnvrtc.so.N / libnvcomp.so.6 with the
objects already loaded under those sonames. No LD_LIBRARY_PATH is needed.
"""
from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path
from typing import Dict, List, Optional

from ._version import CUDA_MAJOR, __version__

_HERE = Path(__file__).resolve().parent

# Where each nvidia-* wheel puts its library (relative to site-packages), in load order: NVRTC opens its builtins
# library by soname, so that is loaded before it.
_WHEEL_LIBS = {
    12: [("cudart", "nvidia/cuda_runtime/lib", "libcudart.so.12"),
         ("nvrtc-builtins", "nvidia/cuda_nvrtc/lib", "libnvrtc-builtins.so.12.*"),
         ("nvrtc", "nvidia/cuda_nvrtc/lib", "libnvrtc.so.12"),
         ("nvcomp", "nvidia/libnvcomp/lib64", "libnvcomp.so.6")],
    13: [("cudart", "nvidia/cu13/lib", "libcudart.so.13"),
         ("nvrtc-builtins", "nvidia/cu13/lib", "libnvrtc-builtins.so.13.*"),
         ("nvrtc", "nvidia/cu13/lib", "libnvrtc.so.13"),
         ("nvcomp", "nvidia/libnvcomp/lib64", "libnvcomp.so.6")],
}

_loaded: Dict[str, str] = {}
_handles: List[ctypes.CDLL] = []  # kept open for the life of the process


def library_path() -> str:
    """Path of this package's libzgpu.so (built with CUDA CUDA_MAJOR)."""
    return str(_HERE / "_lib" / "libzgpu.so")


def executable_path() -> str:
    """Path of the `zgpu` command built with CUDA (run by zgpu's console script)."""
    return str(_HERE / "_bin" / "zgpu")


def _site_dirs() -> List[Path]:
    # the site-packages holding this package first (pip installs the nvidia-* wheels beside it), then sys.path
    out: List[Path] = [_HERE.parent]
    for p in sys.path:
        if p and Path(p) not in out:
            out.append(Path(p))
    return out


def _find(rel: str, pattern: str) -> Optional[Path]:
    for site in _site_dirs():
        d = site / rel
        if d.is_dir():
            hits = sorted(d.glob(pattern))
            if hits:
                return hits[-1]
    return None


def wheel_libraries() -> Dict[str, str]:
    """The CUDA libraries found in installed nvidia-* wheels: {"cudart"|"nvrtc-builtins"|"nvrtc"|"nvcomp": path}.
    A name is missing where its wheel is not installed (the system's copy is then used, if any)."""
    found = {}
    for name, rel, pattern in _WHEEL_LIBS[CUDA_MAJOR]:
        path = _find(rel, pattern)
        if path is not None:
            found[name] = str(path)
    return found


def library_dirs() -> List[str]:
    """Directories of wheel_libraries(), for a child process's LD_LIBRARY_PATH (the `zgpu` command)."""
    dirs: List[str] = []
    for path in wheel_libraries().values():
        d = os.path.dirname(path)
        if d not in dirs:
            dirs.append(d)
    return dirs


def preload() -> Dict[str, str]:
    """Loads the nvidia-* wheels' CUDA runtime, NVRTC and nvCOMP (those installed) into the process; returns
    {name: path} of what is loaded. Idempotent. A library that fails to load is skipped (the system's copy, or
    none, is used: the CUDA runtime is then reported missing when libzgpu.so loads, NVRTC and nvCOMP when a read
    needs them)."""
    if not _loaded:
        for name, path in wheel_libraries().items():
            try:
                _handles.append(ctypes.CDLL(path))
            except OSError:
                continue
            _loaded[name] = path
        if "nvcomp" in _loaded:
            # libzgpu looks for nvCOMP at ZGPU_NVCOMP_LIB first; a user's setting wins
            os.environ.setdefault("ZGPU_NVCOMP_LIB", _loaded["nvcomp"])
    return dict(_loaded)


__all__ = ["CUDA_MAJOR", "__version__", "library_path", "executable_path", "wheel_libraries", "library_dirs",
           "preload"]
