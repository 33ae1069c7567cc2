"""`import mnemic` must work for users who have neither crewai nor langgraph installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_import_mnemic_with_agent_frameworks_blocked() -> None:
    script = textwrap.dedent(
        """
        import importlib.abc, sys

        BLOCKED = ("crewai", "langgraph", "langchain", "langchain_core", "torch", "onnxruntime")

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ImportError(f"{name} is blocked for this test")
                return None

        sys.meta_path.insert(0, Block())
        import mnemic
        from mnemic import Memory, HashEmbedder
        with Memory(embedder=HashEmbedder()) as memory:
            memory.remember("Works without any agent framework.", user_id="u")
            assert memory.recall("agent framework", user_id="u")
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        assert not loaded, loaded
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")


def test_public_names_are_exported() -> None:
    import mnemic

    for name in ("Memory", "MemoryRecord", "MemoryMatch", "MemoryView", "MiniLM", "HashEmbedder",
                 "RecallWeights", "StoreLockedError", "EmbedderMismatchError"):
        assert hasattr(mnemic, name), name
