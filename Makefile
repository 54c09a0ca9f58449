# NeurIPS 2025 in Code — every target sets up what it needs by itself.
#   make book   -> _build/html            make test -> lint, unit, notebooks, book, browser check
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON      ?= python3
VENV        ?= .venv
BIN         := $(VENV)/bin
CONSTRAINTS := pkg/constraints.txt
STAMP       := $(VENV)/.installed
JB          := $(BIN)/jupyter-book
NB          ?=
SANITIZE    := .ci/nbval_sanitize.cfg
NBVAL_FLAGS := --nbval-lax --nbval-cell-timeout=900 --nbval-current-env --nbval-sanitize-with $(SANITIZE) -p no:cacheprovider
# One BLAS/torch thread per process: tiny models gain nothing from more, and nbval runs two
# notebooks at once on two cores, where oversubscribed threads slow each other down tenfold.
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1
export OPENBLAS_NUM_THREADS := 1
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PYDEVD_DISABLE_FILE_VALIDATION := 1
# Stored outputs must not move between CPUs of one machine kind (some have AVX-512, some not): cap
# torch's vectorised kernels, oneDNN and MKL at AVX2, which every x86-64 CPU of this kind has. This
# makes `make execute` and nbval compute on the same numeric paths everywhere; speed is unchanged
# for the book's small tensors. (OpenBLAS, behind numpy, is left alone: this workplace sets
# OPENBLAS_CORETYPE itself on CPUs where that matters.)
export ATEN_CPU_CAPABILITY := avx2
export ONEDNN_MAX_CPU_ISA := AVX2
export MKL_CBWR := AVX2

.PHONY: help setup book book-offline book-instructor student-notebooks pdf test test-unit test-nb \
        test-book test-browser test-colab test-gpu test-gpu-full test-full lint execute audit bench clean

help:
	@echo "make book               build the book into _build/html (sets everything up)"
	@echo "make test               lint + unit tests + notebooks (nbval) + book build + browser check"
	@echo "make execute [NB=slug]  re-execute notebooks in place, record notebooks/runtimes.json"
	@echo "make test-full          every full config (notebooks and sweep CLIs) under NEURIPS25_SMOKE=1"
	@echo "make test-unit | test-nb [NB=slug] | book-offline | book-instructor | student-notebooks | pdf"

# --- environment --------------------------------------------------------------------------------
# torch first and exactly 2.13.0: on this machine kind pip takes the local CPU wheel instead of a
# multi-GB CUDA build; everything else is then resolved against the lock file.
$(STAMP): pkg/pyproject.toml $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c $(CONSTRAINTS) torch==2.13.0
	$(BIN)/python -m pip install -q -c $(CONSTRAINTS) -e "./pkg[all]"
# OptNet (the dqp chapter's baseline): qpth 0.0.18 declares numpy<2 but runs with NumPy 2, so
# it is installed without its dependencies (no extra can say --no-deps); dqp's stored outputs use it
	$(BIN)/python -m pip install -q --no-deps qpth==0.0.18
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

setup: $(STAMP)

chromium:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq chromium fonts-dejavu-core >/dev/null; }

# --- book --------------------------------------------------------------------------------------
# The book serves MathJax, require.js, the widget manager (_vendor/, from the npm registry) and the
# Colab badge itself, so it renders with no internet: from a USB stick, a course server, GitHub Pages.
book: setup _vendor/.stamp
	$(JB) build . -W -n --keep-going -q

_vendor/.stamp: .ci/vendor.sh
	bash .ci/vendor.sh _vendor
	touch $@

# Kept for old instructions: the default book is the offline book.
book-offline: book

book-instructor: setup _vendor/.stamp
	$(BIN)/python .ci/book_config.py instructor > _build_instructor_config.yml
	$(JB) build . -W -n --keep-going -q --config _build_instructor_config.yml --path-output _build/instructor
	rm -f _build_instructor_config.yml
	@echo "instructor edition: _build/instructor/_build/html/index.html"

student-notebooks: setup
	$(BIN)/python .ci/student.py _build/student

pdf: setup _vendor/.stamp
	$(JB) build . --builder pdflatex --path-output _build/pdf

# --- notebooks ---------------------------------------------------------------------------------
execute: setup
	$(BIN)/python .ci/execute.py $(NB)

# --- tests -------------------------------------------------------------------------------------
# Notebook code lines stay within 90 characters so they fit the book's code boxes (the browser check
# measures it too); the package keeps its 110.
lint: setup
	$(BIN)/ruff check --config pkg/pyproject.toml pkg tests .ci notebooks book/_ext
	$(BIN)/ruff check --config pkg/pyproject.toml --line-length 90 --select E501 notebooks

test-unit: lint
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 tests --ignore=tests/book --ignore=tests/full

# Paper scale without its cost: every notebook and every sweep CLI runs its `full` configuration with
# NEURIPS25_SMOKE=1 (loops capped by runtime.cap), so a GPU/Colab `full` run cannot crash on shapes,
# missing keys or devices.
test-full: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 tests/full

test-nb: setup
ifeq ($(NB),)
	$(BIN)/python -m pytest -q $(NBVAL_FLAGS) -n 2 --dist loadfile notebooks/
else
	$(BIN)/python -m pytest -q $(NBVAL_FLAGS) notebooks/$(NB).ipynb
endif

test-book: book
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/book -m "not browser"

test-browser: chromium book
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/book -m browser

test-colab: setup
	$(BIN)/python .ci/colab_sim.py

# On a CUDA machine (`.github/workflows/gpu.yml`, or a lent device):
#  1. the unit suite (tests taking `any_device` run on cuda too);
#  2. every notebook at the book's scale, executed on the GPU into _build/gpu (the asserts must hold;
#     printed digits may move with GPU arithmetic, so nbval's output comparison is not used);
#  3. paper scale: each sweep CLI in FULL_SWEEPS with `--scale full` -> notebooks/results/<slug>.full.json,
#     and each notebook in FULL_NOTEBOOKS at NEURIPS25_SCALE=full into _build/gpu-full, recording its
#     claims in notebooks/results/claims/<slug>.full.json (the book's "full scale (GPU)" column).
# Runtime tables: _build/gpu/runtimes.json and _build/gpu-full/runtimes.json. Commit the .full.json
# files it writes, then `make execute` the changed chapters on a CPU to show the column.
FULL_SWEEPS    ?= $(filter-out %.full,$(basename $(notdir $(wildcard notebooks/results/*.json))))
FULL_NOTEBOOKS ?= $(basename $(notdir $(wildcard notebooks/*.ipynb)))
test-gpu: setup
	$(BIN)/python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 'test-gpu needs a CUDA device')"
	$(BIN)/python -m pytest -q -p no:cacheprovider tests --ignore=tests/book --ignore=tests/full
	$(BIN)/python .ci/execute.py --out _build/gpu
	@cat _build/gpu/runtimes.json
	$(MAKE) test-gpu-full

test-gpu-full: setup
	mkdir -p _build && rm -f _build/full-sweeps.txt
	for s in $(FULL_SWEEPS); do t=$$SECONDS; $(BIN)/python -m neurips25.$$s --scale full; \
	  echo "$$s --scale full: $$((SECONDS - t)) s" | tee -a _build/full-sweeps.txt; done
	$(BIN)/python .ci/execute.py --out _build/gpu-full --scale full $(FULL_NOTEBOOKS)
	@cat _build/gpu-full/runtimes.json

test: test-unit test-nb test-full book test-book test-browser test-colab
	@echo "make test: all checks passed"

audit:
	../shared/bin/chapter-audit

bench: setup
	$(BIN)/python -m neurips25.lm.bench

clean:
	rm -rf _build _vendor .pytest_cache
	find . -name __pycache__ -prune -exec rm -rf {} +
