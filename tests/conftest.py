"""Shared fixtures. The suite runs offline: nothing here may reach the network."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Belt and braces: libraries that phone home are told not to.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def memory(store_path: Path) -> Iterator[Memory]:
    """An embedded store with the fast deterministic test embedder."""
    with Memory(store_path, embedder=HashEmbedder()) as mem:
        yield mem
