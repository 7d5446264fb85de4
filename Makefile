# Two entry points for a fresh machine: `make up` and `make test`.
# Both create .venv from the hashed lock file first; nothing else needs to be installed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install system-packages up test lint docs docs-reference screenshots images clean

$(STAMP): requirements.lock pyproject.toml
	@# Debian's python3 may lack ensurepip (package python3-venv): fall back to virtualenv.
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV) && \
	  $(PYTHON) -m pip install --quiet --target .tools virtualenv && \
	  PYTHONPATH=.tools $(PYTHON) -m virtualenv --quiet $(VENV); }
	$(BIN)/pip install --quiet --require-hashes --no-deps -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

up: $(STAMP)
	$(BIN)/benchrunner up

system-packages:
	bash tools/system-packages.sh

# Most tests wait on real servers and runners, not on the CPU: four workers (each takes whole
# files, so a module's shared server stays in one process) finish far sooner on two cores.
TEST_WORKERS ?= 4

# Tests marked host_wide tune the real host (every task confined to the housekeeping core while
# tuned): they run alone, after the parallel suite.
# Every test starts servers, runners and CLIs as new processes: compile the sources once, so
# that none of them compiles every module again (PYTHONDONTWRITEBYTECODE may be set).
test: $(STAMP) system-packages
	$(BIN)/python -m compileall -q src tests benchmarks
	$(BIN)/pytest -q -p no:cacheprovider --durations=30 -n $(TEST_WORKERS) --dist loadfile -m "not host_wide"
	$(BIN)/pytest -q -p no:cacheprovider -m host_wide

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The documentation site (docs/, mkdocs.yml) into build/site; `$(BIN)/mkdocs serve` to browse it.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The reference pages the code already says (CLI, settings, adapters, HTTP API), written anew;
# tests/unit/test_docs_reference.py fails while a committed page differs.
docs-reference: $(STAMP)
	$(BIN)/python -m tests.docs_reference

# The documentation's console pictures, taken anew by the browser tests.
screenshots: $(STAMP) system-packages
	BENCHRUNNER_SCREENSHOTS=$(CURDIR)/docs/screenshots $(BIN)/pytest -q -p no:cacheprovider tests/console

# The server and runner container images, as OCI layouts in images/ (deploy/images/build.sh;
# root, mmdebstrap and umoci). SOURCE_DATE_EPOCH defaults to the last commit's time. Both are
# made from one wheel, built here once.
images: $(STAMP)
	wheel=$$(mktemp -d) && trap 'rm -rf "$$wheel"' EXIT && \
	  SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct)} \
	  $(BIN)/python -m pip wheel --quiet --no-deps -w "$$wheel" . && \
	  for kind in server runner; do \
	    deploy/images/build.sh $$kind --out images/$$kind --wheel "$$wheel"/benchrunner-*.whl || exit; \
	  done

clean:
	rm -rf $(VENV)
