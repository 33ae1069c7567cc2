"""A process killed with SIGKILL while writing checkpoints leaves only whole checkpoints behind
(the long run, 60 trials per provider with CrewAI's JsonProvider as reference, is
`python bench/checkpoint_crash.py`); leftovers of killed writes are never taken for checkpoints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("crewai")

from mnemic.checkpoints import catalog, crewai_files
from mnemic.core.retention import OWNER_SUFFIX

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the harness forks its writers")
def test_sigkill_while_writing_never_leaves_an_unreadable_checkpoint() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "checkpoint_crash.py"), "--trials", "8",
                          "--payload-kb", "128", "--max-delay", "0.15", "--providers", "json", "sqlite"],
                         capture_output=True, text=True, timeout=300, check=True)
    results = json.loads(out.stdout)["results"]
    for name in ("json", "sqlite"):
        assert results[name]["trials"] == 8
        assert results[name]["checkpoints_read"] > 0, "the writer was killed before writing anything"
        assert results[name]["unreadable_checkpoints"] == 0, results


def test_leftovers_of_killed_writes_are_ignored_and_pruned(tmp_path: Path) -> None:
    whole = crewai_files.new_checkpoint_path(tmp_path, "main")
    crewai_files.write_checkpoint(whole, json.dumps({"entities": []}), "alice")
    temp = whole.parent / f".{whole.name}.x1y2.tmp"
    temp.write_text('{"entities": [')  # a write killed half way
    orphan = whole.parent / ("20200101T000000_deadbeef_p-none.json" + OWNER_SUFFIX)
    orphan.write_text("owner")  # killed after the owner was recorded, before the file
    old = time.time() - 7200
    os.utime(temp, (old, old))
    os.utime(orphan, (old, old))

    assert [i.restore_from for i in catalog.list_checkpoints(tmp_path)] == [str(whole)]
    assert catalog.prune_checkpoints(tmp_path, keep=5) == {"removed": 0, "leftovers": 2}
    assert sorted(p.name for p in whole.parent.iterdir()) == sorted([whole.name, whole.name + OWNER_SUFFIX])
