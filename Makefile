# zgpu — top-level entry points. `make demo` and `make test` work on a fresh Debian 12 machine (as root):
# both install what is missing first (scripts/install-deps.sh).
#
#   make            build (Release) into build/: build/bin/zgpu, build/lib/libzgpu.so, libzgpu_static.a
#   make deps       system packages + .venv with the pinned Python packages (instant when up to date)
#   make test       deps + build, unit tests (ctest), interop tests (pytest vs zarr-python),
#                   Python package tests, then the same unit tests under ASan+UBSan (build-asan/)
#   make test-fast  build + ctest only
#   make demo       build, write a sample array, read it back (GPU if present) and report the speed
#   make bench      CPU read-all benchmark vs tensorstore and zarr-python (BENCH_ARGS="--planes 64" for a quick run)
#   make fuzz       libFuzzer targets (clang) in build-fuzz/
#   make clean
#
# Variables: ZGPU_CUDA=AUTO|ON|OFF (CUDA device path), JOBS (parallel build jobs), CTEST_JOBS.

SHELL      := /bin/bash
ZGPU_CUDA  ?= AUTO
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_JOBS ?= 2
VENV_PY    := .venv/bin/python
CLANG      := $(shell command -v clang 2>/dev/null)
CMAKE_COMMON := -DZGPU_WERROR=ON -DZGPU_CUDA=$(ZGPU_CUDA)
# Python package tests run when the package exists (python/pyproject.toml).
PY_TEST_DIRS := tests/interop $(if $(wildcard python/tests),python/tests,)

.PHONY: all deps build python test test-fast test-unit test-interop test-asan demo bench fuzz clean

all: build

deps:
	@bash scripts/install-deps.sh

build:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release $(CMAKE_COMMON)
	cmake --build build -j$(JOBS)

# The Python package, pip-installed into .venv (only once python/pyproject.toml exists).
python: deps build
ifneq ($(wildcard python/pyproject.toml),)
	.venv/bin/pip install -q ./python
else
	@echo "python/pyproject.toml not present: no Python package to install"
endif

test-unit: build
	ctest --test-dir build --output-on-failure -j$(CTEST_JOBS)

test-interop: deps build python
	ZGPU_CLI=$(CURDIR)/build/bin/zgpu $(VENV_PY) -m pytest $(PY_TEST_DIRS) -q

# Unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer (Debug, clang when available).
test-asan:
	$(if $(CLANG),CC=$(CLANG)) cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DZGPU_SANITIZE=ON $(CMAKE_COMMON)
	cmake --build build-asan -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir build-asan --output-on-failure -j$(CTEST_JOBS)

# Sequential on purpose: each stage's failure stops the run with its own output.
test: deps
	$(MAKE) --no-print-directory build
	$(MAKE) --no-print-directory test-unit
	$(MAKE) --no-print-directory test-interop
	$(MAKE) --no-print-directory test-asan

test-fast: build
	ctest --test-dir build --output-on-failure -j$(CTEST_JOBS)

demo: deps build
	bash scripts/demo.sh

bench: deps build python
	$(VENV_PY) bench/bench_cpu.py $(BENCH_ARGS)

# libFuzzer targets: the library itself is instrumented for coverage (fuzzer-no-link) so the fuzzers
# see its branches. Run one with e.g. build-fuzz/bin/fuzz_json fuzz/corpus/fuzz_json -max_total_time=60
fuzz:
	@test -n "$(CLANG)" || { echo "make fuzz needs clang (scripts/install-deps.sh installs it)"; exit 1; }
	CC=$(CLANG) cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZGPU_FUZZ=ON -DZGPU_SANITIZE=ON \
	  -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link $(CMAKE_COMMON)
	cmake --build build-fuzz -j$(JOBS)
	@ls build-fuzz/bin | grep '^fuzz_' || true

clean:
	rm -rf build build-asan build-fuzz bench/data demo-data
