"""Run a script of `examples/` the way a user does, offline: a fresh process, no model configured."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Collection
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_example(script: str, store: Path, *, unset: Collection[str] = ("MNEMIC_LLM",)) -> str:
    """The example's standard output. Skips when the bundled MiniLM weights are not installed;
    `unset` names the environment variables that would make it call a real model."""
    from mnemic.core.embeddings import WeightsNotFoundError, find_weights

    try:
        find_weights()
    except WeightsNotFoundError as exc:
        pytest.skip(f"MiniLM weights not available: {exc}")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    return subprocess.run([sys.executable, str(EXAMPLES / script), str(store)],
                          capture_output=True, text=True, timeout=600, check=True, env=env).stdout
