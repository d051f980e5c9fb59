# zgpu — top-level entry points. `make demo` and `make test` work on a fresh Debian 12 machine (as root):
# both install what is missing first (scripts/install-deps.sh).
#
#   make            build (Release) into build/: build/bin/zgpu, build/lib/libzgpu.so, libzgpu_static.a
#   make deps       system packages + .venv with the pinned Python packages (instant when up to date)
#   make test       deps + build, unit tests (ctest), interop tests (pytest vs zarr-python),
#                   Python package tests, the hostile-input suite's fast subset (tests/hostile), TIFF files
#                   against tifffile and GDAL (tests/tiff), and beside
#                   them the unit tests under ASan+UBSan (build-asan/); the long exhaustive unit suites run a
#                   sample in both (a different one each run)
#   make test-long  make test with those suites whole, the whole hostile-input suite, 50 kill -9
#                   rounds per fault scenario (ZGPU_FAULT_ROUNDS), and CUDA built for every current GPU
#   make test-fast  build + ctest only
#   make wheel      the CPU wheel for pip (manylinux, its libraries bundled) in dist/; make test-wheel also installs
#                   it into a fresh venv and runs the Python tests against it
#   make wheel-cuda CUDA=13|12  the CUDA plugin wheel zgpu-cuda13 / zgpu-cuda12 (pip install zgpu[cu13]) in dist/;
#                   make test-wheel-cuda CUDA=13|12 installs zgpu[cuN] into a fresh venv, runs the Python tests
#                   (docs/install.md; slow: not part of make test)
#   make api-docs   docs/api/python.md from the docstrings (python/tests/test_api_docs.py checks it is current)
#   make demo       build, write a sample array, read it back (GPU if present) and report the speed
#   make bench      CPU read-all benchmark vs tensorstore and zarr-python (BENCH_ARGS="--planes 64" for a quick run)
#   make fuzz       libFuzzer targets (clang) in build-fuzz/; FUZZ_SECONDS=60 also runs each that long
#   make clean
#
# Variables: ZGPU_CUDA=AUTO|ON|OFF (CUDA device path), ZGPU_CUDA_ARCHS (empty: every current GPU; native; 90), JOBS (parallel build jobs), CTEST_JOBS,
#            BUILD / ASAN_BUILD / FUZZ_BUILD (build directories), ASAN_SAMPLE (1 case in N under ASan),
#            UNIT_SAMPLE / INTEROP_SAMPLE (1 case in N of the long unit suites / the interop region reads),
#            ZGPU_HOSTILE (full: every hostile-input case; empty: the fast subset).

SHELL      := /bin/bash
ZGPU_CUDA  ?= AUTO
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_JOBS ?= 2
# Build directories (override to keep several configurations side by side).
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
ZGPU_BIN   := $(CURDIR)/$(BUILD)/bin/zgpu
VENV_PY    := .venv/bin/python
CLANG      := $(shell command -v clang 2>/dev/null)
# The CUDA architectures of `make test` and `make demo`: the GPUs of this machine when it has one, else sm_90 alone
# (every CUDA source still compiled once, -Werror; a machine without a GPU runs none of it). The default set of
# every current GPU (cmake/cuda.cmake) costs about 20 s of a core per architecture, two thirds of `make test` on
# two cores: `make` and `make test-long` build it, and ZGPU_CUDA_ARCHS= (empty) asks for it anywhere.
ifneq ($(filter test demo,$(MAKECMDGOALS)),)
ZGPU_CUDA_ARCHS ?= $(if $(shell nvidia-smi -L 2>/dev/null),native,90)
export ZGPU_CUDA_ARCHS
endif
CMAKE_COMMON := -DZGPU_WERROR=ON -DZGPU_CUDA=$(ZGPU_CUDA) -DZGPU_CUDA_ARCHS="$(ZGPU_CUDA_ARCHS)"
# Sanitizer and fuzz builds are host-only: ASan does not mix with the CUDA runtime, and a CUDA link
# (g++) would pull GCC's ASan runtime into a clang-built library.
CMAKE_HOST_ONLY := -DZGPU_WERROR=ON -DZGPU_CUDA=OFF

# Inside `make test` the stages run with ZGPU_TEST_BUILT=1: deps and build have run once already, and a stage does
# not run cmake again (a configure and a no-op build cost seconds a stage, and a stage beside another must not
# regenerate the build tree the other is testing).
STAGE_PRE := $(if $(ZGPU_TEST_BUILT),,deps build)

.PHONY: all deps build python test test-long test-fast test-unit test-interop test-python test-hostile test-remote test-zarr-suite test-tiff wheel test-wheel \
        wheel-cuda test-wheel-cuda api-docs \
        test-asan demo bench fuzz clean

all: build

deps:
	@bash scripts/install-deps.sh

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_COMMON)
	cmake --build $(BUILD) -j$(JOBS)

# The Python package, pip-installed into .venv (only once python/pyproject.toml exists). It packages the
# library just built (no second CMake build) and uses the pinned setuptools of requirements-dev.txt. Not again
# while nothing changed: $(PY_STAMP) names the library installed, newer than it and than every file of python/
# outside tests/ (and what pip writes there); a new .venv (make deps) has no stamp.
PY_STAMP := .venv/.zgpu-python-installed
python: $(STAGE_PRE)
ifneq ($(wildcard python/pyproject.toml),)
	@lib=$(CURDIR)/$(BUILD)/lib/libzgpu.so; \
	if [ -f "$$lib" ] && [ -f $(PY_STAMP) ] && [ "$$(cat $(PY_STAMP))" = "$$lib" ] && [ -z "$$(find $$lib python -newer $(PY_STAMP) \
	     -type f -not -path 'python/tests/*' -not -path 'python/build/*' -not -path 'python/*.egg-info/*' \
	     -not -name '*.pyc' -print -quit)" ]; then echo "python package: installed and up to date ($(PY_STAMP))"; \
	else rm -f $(PY_STAMP); echo "ZGPU_PREBUILT_LIB=$$lib .venv/bin/pip install -q --no-build-isolation ./python"; \
	  ZGPU_PREBUILT_LIB=$$lib .venv/bin/pip install -q --no-build-isolation ./python && echo "$$lib" > $(PY_STAMP); fi
else
	@echo "python/pyproject.toml not present: no Python package to install"
endif

# The long exhaustive unit suites (tests/unit/sampling.h: the GPU DEFLATE decoder's rules on the CPU, blosc framing
# and parsing; 250 of the Release ctest's 400 CPU seconds on the 2-core machine) run about one case in UNIT_SAMPLE
# here, a different sample each run (its seed printed); make test-long and make test-fast run every case. (1 in 8 and
# 1 in 32 under ASan since 2026-11-28: make test's 10 CPU minutes on two cores were 5 min 40 s against the goal of 4.)
UNIT_SAMPLE ?= 8
test-unit: $(STAGE_PRE)
	ZGPU_TEST_SAMPLE=$(if $(filter 1,$(UNIT_SAMPLE)),,1/$(UNIT_SAMPLE)) \
	  ctest --test-dir $(BUILD) --output-on-failure -j$(CTEST_JOBS)

# The interop suite's region reads (tests/interop, marked `sampled`: 810 CLI processes) run about one in
# INTEROP_SAMPLE here, a different sample each run (its seed printed); make test-long runs every one. Every fixture
# is still read whole and described by `zgpu info`.
INTEROP_SAMPLE ?= 4
test-interop: $(STAGE_PRE)
	ZGPU_TEST_SAMPLE=$(if $(filter 1,$(INTEROP_SAMPLE)),,1/$(INTEROP_SAMPLE)) \
	  ZGPU_CLI=$(ZGPU_BIN) $(VENV_PY) -m pytest tests/interop -q

test-python: $(STAGE_PRE) python
ifneq ($(wildcard python/tests),)
	ZGPU_LIB=$(CURDIR)/$(BUILD)/lib/libzgpu.so $(VENV_PY) -m pytest python/tests -q
endif

# The hostile-input suite (tests/hostile): damaged chunks of every codec set-up, blosc header lies, shard index
# tricks, bad metadata, special files in the store, bombs under a memory limit. It runs the package from python/
# against the library just built (no pip install needed); ZGPU_HOSTILE=full runs every case (make test-long), and
# ZGPU_HOSTILE_JSON=path writes the counts per family. On the GPU machine: scripts/gpu/hostile.sh.
ZGPU_HOSTILE ?=
test-hostile: $(STAGE_PRE)
	ZGPU_HOSTILE=$(ZGPU_HOSTILE) ZGPU_LIB=$(CURDIR)/$(BUILD)/lib/libzgpu.so PYTHONPATH=$(CURDIR)/python \
	  $(VENV_PY) -m pytest tests/hostile -q -p no:cacheprovider

# Remote stores end to end (tests/remote): zgpu, its CLI and zarr-python against a local HTTP server with fault
# injection (tests/remote/http_server.py) and a moto S3 server, both in the pytest process on 127.0.0.1.
test-remote: $(STAGE_PRE)
	ZGPU_LIB=$(CURDIR)/$(BUILD)/lib/libzgpu.so PYTHONPATH=$(CURDIR)/python ZGPU_CLI=$(ZGPU_BIN) \
	  $(VENV_PY) -m pytest tests/remote -q -p no:cacheprovider

# TIFF files (tests/tiff, docs/tiff.md): written by tifffile and by GDAL across codecs, predictors, layouts and data
# types, read through the package from python/ and the CLI and compared with tifffile's reading; damaged files.
test-tiff: $(STAGE_PRE)
	ZGPU_LIB=$(CURDIR)/$(BUILD)/lib/libzgpu.so PYTHONPATH=$(CURDIR)/python ZGPU_CLI=$(ZGPU_BIN) \
	  $(VENV_PY) -m pytest tests/tiff -q -p no:cacheprovider

# zarr-python's own array, indexing, codec and v2 tests with zgpu's codec pipeline (codec_pipeline.path through
# zarr's environment variable; the entry point of the package test-python installed registers it). The suite's
# sdist is unpacked by scripts/install-deps.sh; its pyproject's addopts need plugins the suite does not use here.
test-zarr-suite: $(STAGE_PRE) python
	@suite=$$(ls -d $(CURDIR)/.venv/share/zarr-suite/zarr-*/ 2>/dev/null | head -1); \
	[ -n "$$suite" ] || { echo "zarr-python's test suite is missing: make deps unpacks it"; exit 1; }; \
	echo "zarr-python's tests in $$suite with ZARR_CODEC_PIPELINE__PATH=zgpu.zarr.ZgpuCodecPipeline"; \
	cd $$suite && ZARR_CODEC_PIPELINE__PATH=zgpu.zarr.ZgpuCodecPipeline ZGPU_LIB=$(CURDIR)/$(BUILD)/lib/libzgpu.so \
	  $(CURDIR)/$(VENV_PY) -m pytest -o addopts="" -q -p no:cacheprovider \
	  tests/test_indexing.py tests/test_array.py tests/test_v2.py tests/test_codecs

# Unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer (Debug with -O1, ASan's advice: the same
# checks, 2-4x faster than -O0; clang when available; -Wno-unknown-warning-option lets clang skip GCC-only -Wno-*
# flags under -Werror). The long exhaustive suites (tests/unit/sampling.h) run about 1 case in ASAN_SAMPLE there,
# a different sample each run (its seed is printed; ZGPU_TEST_SAMPLE=1/N:SEED repeats it); `make test-long` runs
# every case here too (ASAN_SAMPLE=1), and in the Release build's ctest (UNIT_SAMPLE=1).
ASAN_SAMPLE ?= 32
test-asan:
	$(if $(CLANG),CC=$(CLANG)) cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DZGPU_SANITIZE=ON \
	  "-DCMAKE_C_FLAGS_DEBUG=-g -O1" $(if $(CLANG),-DCMAKE_C_FLAGS=-Wno-unknown-warning-option) $(CMAKE_HOST_ONLY)
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	ZGPU_TEST_SAMPLE=1/$(ASAN_SAMPLE) ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --test-dir $(ASAN_BUILD) --output-on-failure -j$(CTEST_JOBS)

# Every stage runs even when an earlier one failed (a build failure stops the stages after it), so one CI run
# shows all failures; the exit status is non-zero if any stage failed. Four lines of work run side by side on
# the machine's cores: the unit tests (ctest), the Python stages in two lines (pytest: one core each), and the
# sanitizer stage (its own host-only build); all but the first keep
# their output in $(PY_LOG), $(PY_LOG2) and $(ASAN_LOG), shown when they end. With the Python stages in one line,
# one core sat idle for the last two and a half minutes of seven (the 2-core machine, 2026-11-27); with the zarr
# suite in the second line, that line ran 90 s alone after the others (2026-11-28): the lines now take about 220 s
# each beside the others. The package is installed before them, so that no two lines install it at once.
TEST_STAGES := test-unit test-interop test-python test-hostile test-remote test-tiff test-zarr-suite
PY_STAGES_1 := test-interop test-hostile test-zarr-suite
PY_STAGES_2 := test-python test-remote test-tiff
ASAN_LOG    := $(ASAN_BUILD)/make-test-asan.log
PY_LOG      := $(BUILD)/make-test-python.log
PY_LOG2     := $(BUILD)/make-test-python-2.log

test: deps
	@mkdir -p $(ASAN_BUILD); $(MAKE) --no-print-directory test-asan > $(ASAN_LOG) 2>&1 & asan=$$!; failed=""; \
	if $(MAKE) --no-print-directory build; then rm -f $(PY_LOG).failed $(PY_LOG2).failed; \
	  $(MAKE) --no-print-directory python ZGPU_TEST_BUILT=1 || failed="$$failed python"; \
	  lane() { log=$$1; shift; f=""; for t in "$$@"; do echo "==== make $$t"; \
	      $(MAKE) --no-print-directory $$t ZGPU_TEST_BUILT=1 || f="$$f $$t"; done; echo "$$f" > $$log.failed; }; \
	  lane $(PY_LOG) $(PY_STAGES_1) > $(PY_LOG) 2>&1 & py1=$$!; \
	  lane $(PY_LOG2) $(PY_STAGES_2) > $(PY_LOG2) 2>&1 & py2=$$!; \
	  echo "==== make test-unit"; $(MAKE) --no-print-directory test-unit ZGPU_TEST_BUILT=1 || failed="$$failed test-unit"; \
	  wait $$py1; wait $$py2; \
	  echo "==== make $(PY_STAGES_1) | $(PY_STAGES_2) (two lines beside test-unit; their output, also in $(PY_LOG) and $(PY_LOG2):)"; \
	  cat $(PY_LOG) $(PY_LOG2); failed="$$failed$$(cat $(PY_LOG).failed 2>/dev/null || echo ' python-stages')"; \
	  failed="$$failed$$(cat $(PY_LOG2).failed 2>/dev/null || echo ' python-stages-2')"; \
	else failed=" build"; fi; \
	echo "==== make test-asan (ran beside the stages above; its output, also in $(ASAN_LOG):)"; \
	wait $$asan || failed="$$failed test-asan"; cat $(ASAN_LOG); \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed"; exit 1; fi; \
	echo "make test: all stages passed ($(TEST_STAGES) test-asan)"

test-long:
	@ZGPU_FAULT_ROUNDS=$${ZGPU_FAULT_ROUNDS:-50} $(MAKE) --no-print-directory test ASAN_SAMPLE=1 UNIT_SAMPLE=1 \
	  INTEROP_SAMPLE=1 ZGPU_CUDA_ARCHS= ZGPU_HOSTILE=full

# The CPU wheel (manylinux, the shared libraries bundled) into dist/; test-wheel installs it into a fresh venv and
# runs python/tests against it (scripts/build-wheel.sh).
wheel:
	bash scripts/build-wheel.sh

test-wheel:
	bash scripts/build-wheel.sh --test

# The CUDA variants: plugin wheels holding libzgpu built with CUDA 13 (this machine's toolkit) or CUDA 12 (compiled
# against PyPI's CUDA 12.9 wheels: scripts/cuda12-toolkit.sh), for every current GPU (scripts/build-wheel-cuda.sh).
CUDA ?= 13
wheel-cuda:
	bash scripts/build-wheel-cuda.sh $(CUDA)

test-wheel-cuda:
	bash scripts/build-wheel-cuda.sh --test $(CUDA)

# The Python API reference, from the docstrings of the package in python/ with the library just built.
api-docs: $(STAGE_PRE)
	ZGPU_LIB=$(CURDIR)/$(BUILD)/lib/libzgpu.so $(VENV_PY) scripts/gen-api-docs.py

test-fast: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(CTEST_JOBS)

demo: deps build
	ZGPU=$(ZGPU_BIN) bash scripts/demo.sh

bench: deps build python
	ZGPU_LIB=$(CURDIR)/$(BUILD)/lib/libzgpu.so $(VENV_PY) bench/bench_cpu.py --cli $(ZGPU_BIN) $(BENCH_ARGS)

# libFuzzer targets: the library itself is instrumented for coverage (fuzzer-no-link) so the fuzzers
# see its branches. Run one with e.g. build-fuzz/bin/fuzz_json fuzz/corpus/fuzz_json -max_total_time=60
fuzz:
	@test -n "$(CLANG)" || { echo "make fuzz needs clang (scripts/install-deps.sh installs it)"; exit 1; }
	CC=$(CLANG) cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZGPU_FUZZ=ON -DZGPU_SANITIZE=ON \
	  "-DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link -Wno-unknown-warning-option" $(CMAKE_HOST_ONLY)
	cmake --build $(FUZZ_BUILD) -j$(JOBS)
	@ls $(FUZZ_BUILD)/bin | grep '^fuzz_' || true
ifdef FUZZ_SECONDS
	@# Each target for FUZZ_SECONDS, new inputs in $(FUZZ_BUILD)/corpus/<name> (the checked-in corpus is read only).
	set -e; for f in $(FUZZ_BUILD)/bin/fuzz_*; do n=$$(basename $$f); mkdir -p $(FUZZ_BUILD)/corpus/$$n; \
	  echo "== $$n ($(FUZZ_SECONDS) s)"; $$f $(FUZZ_BUILD)/corpus/$$n fuzz/corpus/$$n -max_total_time=$(FUZZ_SECONDS) \
	  -print_final_stats=1 2>&1 | tail -4; done
endif

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) bench/data demo-data
