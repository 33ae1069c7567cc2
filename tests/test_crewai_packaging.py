"""Without CrewAI, `mnemic.integrations.crewai` and `mnemic.tools.crewai` say how to install it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


@pytest.mark.parametrize("module", ["mnemic.integrations.crewai", "mnemic.tools.crewai"])
def test_import_without_crewai_names_the_extra(module: str) -> None:
    script = textwrap.dedent(
        f"""
        import importlib.abc, sys

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "crewai":
                    raise ImportError(f"No module named {{name!r}}")
                return None

        sys.meta_path.insert(0, Block())
        import mnemic  # works without CrewAI
        try:
            import {module}
        except ImportError as exc:
            assert "pip install 'mnemic[crewai]'" in str(exc), str(exc)
            print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
