"""The `zgpu` console script: runs the command-line tool packaged with the library (zgpu/_bin/zgpu)."""
from __future__ import annotations

import os
import sys


def main() -> None:
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "zgpu")
    if not os.access(exe, os.X_OK):
        sys.stderr.write("zgpu: the command-line tool was not packaged with this installation (%s is missing); "
                         "build it with `make` and use build/bin/zgpu\n" % exe)
        raise SystemExit(1)
    os.execv(exe, [exe] + sys.argv[1:])
