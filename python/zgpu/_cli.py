"""The `zgpu` console script: runs the command-line tool packaged with the library that zgpu loaded: zgpu/_bin/zgpu,
or with a CUDA plugin (zgpu[cu13]) its own build, with the nvidia-* wheels' libraries on its LD_LIBRARY_PATH."""
from __future__ import annotations

import os
import sys


def main() -> None:
    from . import _capi
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "zgpu")
    plugin = _capi.PLUGIN
    if plugin is not None and os.access(plugin.executable_path(), os.X_OK):
        exe = plugin.executable_path()
        # the command links libcudart.so.N and opens NVRTC by name: the wheels' directories go on its search path
        dirs = plugin.library_dirs() + [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
        os.environ["LD_LIBRARY_PATH"] = ":".join(dirs)
    if not os.access(exe, os.X_OK):
        sys.stderr.write("zgpu: the command-line tool was not packaged with this installation (%s is missing); "
                         "build it with `make` and use build/bin/zgpu\n" % exe)
        raise SystemExit(1)
    os.execv(exe, [exe] + sys.argv[1:])
