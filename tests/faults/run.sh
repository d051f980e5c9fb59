#!/usr/bin/env bash
# ctest's entry to the fault tests (faults.py): runs them with the project's .venv (numpy, zarr), or skips (77).
# Usage: tests/faults/run.sh path/to/zgpu path/to/libzgpu.so   (ZGPU_FAULT_ROUNDS=50 for a longer run)
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$(dirname "$here")")"
py="$repo/.venv/bin/python"
[ -x "$py" ] || py="$(command -v python3)"
if ! "$py" -c "import numpy, zarr" 2> /dev/null; then
    echo "skipped: the fault tests need numpy and zarr (make deps makes .venv)"
    exit 77
fi
exec "$py" "$here/faults.py" "$@"
