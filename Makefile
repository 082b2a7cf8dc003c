# Two commands on a fresh Debian machine: `make run` and `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
SYSDEPS := $(VENV)/.sysdeps
SAMPLE  ?= demo
SOURCES := fuselens core passes session cli gui main.py  # compileall skips fuselens/'s symlinked folders
XDG_DATA_HOME ?= $(HOME)/.local/share

.PHONY: run test lint setup sysdeps bench clean samples readme install-desktop

run: setup
	$(BIN)/python main.py $(SAMPLE)

test: setup
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -n auto
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
	$(BIN)/python -m compileall -q -j 0 $(SOURCES)  # the first `make run` does not compile the tree
	touch $@

samples: setup
	$(BIN)/python resources/build_samples.py

bench: setup
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

# The desktop menu entry and its icon, starting this checkout's `fuselens`.
install-desktop: setup
	mkdir -p $(XDG_DATA_HOME)/applications $(XDG_DATA_HOME)/icons/hicolor/scalable/apps
	sed 's|^Exec=fuselens |Exec=$(abspath $(BIN))/fuselens |' resources/desktop/fuselens.desktop \
		> $(XDG_DATA_HOME)/applications/fuselens.desktop
	cp resources/desktop/fuselens.svg $(XDG_DATA_HOME)/icons/hicolor/scalable/apps/fuselens.svg
	if command -v update-desktop-database >/dev/null; then update-desktop-database -q $(XDG_DATA_HOME)/applications; fi

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

readme: setup
	$(BIN)/python scripts/update_readme.py
