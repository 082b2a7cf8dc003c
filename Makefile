# Two commands on a fresh Debian machine: `make run` and `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
SYSDEPS := $(VENV)/.sysdeps
SAMPLE  ?= demo

.PHONY: run test lint setup sysdeps bench clean samples readme

run: setup
	$(BIN)/python main.py $(SAMPLE)

test: setup
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q
	$(MAKE) lint

lint: setup
	$(BIN)/ruff check .
	$(BIN)/lint-imports

setup: $(STAMP)

$(SYSDEPS): scripts/install-system-deps.sh
	@./scripts/install-system-deps.sh
	@mkdir -p $(VENV) && touch $@

$(STAMP): pyproject.toml $(SYSDEPS)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

samples: setup
	$(BIN)/python resources/build_samples.py

bench: setup
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

readme: setup
	$(BIN)/python scripts/update_readme.py
