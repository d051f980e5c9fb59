#!/usr/bin/env bash
# Installs what zgpu needs to build and test on Debian 12 (run as root, or with sudo available):
#   - system packages (compilers, cmake, compression libraries) through apt-get, only those missing;
#   - a project virtual environment .venv with the pinned Python packages of requirements-dev.txt.
# Idempotent: a stamp (.deps-stamp) holds a hash of requirements-dev.txt and of this script; when it
# matches and .venv is intact, the script returns at once.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

STAMP="$ROOT/.deps-stamp"
VENV="$ROOT/.venv"
PYTHON="${PYTHON:-python3}"

APT_PACKAGES=(build-essential cmake clang libzstd-dev libdeflate-dev liblz4-dev libblosc-dev libbz2-dev
              libcurl4-openssl-dev libssl-dev liblzma-dev libjpeg62-turbo-dev
              zlib1g-dev pkg-config)

log() { printf '[install-deps] %s\n' "$*"; }

want_hash() {
    cat "$ROOT/requirements-dev.txt" "$ROOT/scripts/install-deps.sh" | sha256sum | cut -d' ' -f1
}

is_installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

missing_apt_packages() {
    local p
    for p in "${APT_PACKAGES[@]}"; do
        is_installed "$p" || printf '%s\n' "$p"
    done
    # python3-venv only when the interpreter cannot create a venv with pip by itself
    # (Debian's python3 lacks ensurepip until python3-venv is installed; a pyenv python has it).
    if ! command -v "$PYTHON" >/dev/null 2>&1; then
        printf '%s\n' python3 python3-venv
    elif ! "$PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1; then
        printf '%s\n' python3-venv
    fi
}

venv_ok() {  # cheap check (no imports): the stamp is written only after a complete install
    [ -x "$VENV/bin/python" ] && [ -f "$VENV/pyvenv.cfg" ] && compgen -G "$VENV/lib/python3*/site-packages/zarr" >/dev/null
}

# Fast path: stamp matches, venv usable, no system package missing.
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(want_hash)" ] && venv_ok && [ -z "$(missing_apt_packages)" ]; then
    exit 0
fi

# ---- system packages ----
mapfile -t MISSING < <(missing_apt_packages | sort -u)
if [ "${#MISSING[@]}" -gt 0 ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
            log "missing system packages (${MISSING[*]}) and not root: install them and rerun"; exit 1
        fi
    fi
    log "apt-get install ${MISSING[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends "${MISSING[@]}"
else
    log "system packages: all present"
fi

# ---- Python virtual environment ----
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    log "creating $VENV with $($PYTHON --version 2>&1)"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
fi
log "pip install -r requirements-dev.txt"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$ROOT/requirements-dev.txt"
"$VENV/bin/python" -m pip check >/dev/null || { "$VENV/bin/python" -m pip check; exit 1; }

# zarr-python's own test suite, for `make test-zarr-suite` (its tests run with zgpu's codec pipeline): the sdist of
# the pinned zarr, unpacked into .venv/share/zarr-suite/ (the tests never reach the network themselves)
ZARR_VERSION=$(sed -n 's/^zarr==//p' "$ROOT/requirements-dev.txt")
SUITE="$VENV/share/zarr-suite"
if [ ! -d "$SUITE/zarr-$ZARR_VERSION/tests" ]; then
    log "zarr-python $ZARR_VERSION's test suite (sdist)"
    rm -rf "$SUITE" && mkdir -p "$SUITE"
    "$VENV/bin/python" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
        -d "$SUITE" "zarr==$ZARR_VERSION"
    tar -xzf "$SUITE/zarr-$ZARR_VERSION.tar.gz" -C "$SUITE" "zarr-$ZARR_VERSION/tests" "zarr-$ZARR_VERSION/pyproject.toml"
fi

want_hash >"$STAMP"
log "done ($("$VENV/bin/python" -c 'import zarr, numcodecs, numpy; print("zarr", zarr.__version__, "numcodecs", numcodecs.__version__, "numpy", numpy.__version__)'))"
