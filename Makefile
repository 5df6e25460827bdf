# The two set-up commands of README.md. Both build .venv on first use.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
TORCH   := torch==2.13.0

.PHONY: demo test lint typecheck pytest redis-check clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip >/dev/null
	# The CPU build of torch first: a plain "torch" would pull several GB of CUDA.
	$(BIN)/pip install $(TORCH)

$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -e '.[dev,redis]'
	touch $@ $(VENV)/.demo-installed

demo: $(VENV)/.demo-installed
	$(BIN)/hotset demo

redis-check:
	@if ! command -v redis-server >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "redis-server not found: installing Debian's redis-server package"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	    systemctl disable --now redis-server >/dev/null 2>&1 || service redis-server stop >/dev/null 2>&1 || true; \
	  else \
	    echo "error: redis-server is not on PATH; install it (Debian/Ubuntu: sudo apt-get install redis-server) and re-run make test" >&2; \
	    exit 1; \
	  fi; \
	fi

lint: $(VENV)/.test-installed
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: $(VENV)/.test-installed
	$(BIN)/mypy

pytest: $(VENV)/.test-installed redis-check
	$(BIN)/pytest -q

test: redis-check lint typecheck pytest

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
