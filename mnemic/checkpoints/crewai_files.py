"""CrewAI's JSON checkpoint layout, written so that a crash leaves whole files only.

Same places and names as CrewAI's `JsonProvider`, so CrewAI restores them and its tools list
them: `<location>/<branch>/<UTC time>_<8 hex>_p-<parent id>.json`, the checkpoint id being the
part before `_p-`. What differs is how a file comes to exist: CrewAI opens the final path and
writes into it, so a crash mid-write leaves a torn file that fails restore; here the bytes go to a
temporary file in the same directory, are fsynced, renamed over the final name and the directory
is fsynced (`core.durable.write_atomic`). A reader sees the old state or the new one, never half.

The owner's sidecar (`<file>.mnemic-owner`, see `core.retention`) is written before the file, so
no checkpoint ever exists without one. A crash can leave a temporary `.<name>.<random>.tmp` or a
sidecar without its file; neither ends in `.json`, so no reader mistakes it for a checkpoint, and
`remove_leftovers` clears them.

This module imports no framework: the operator CLI lists and prunes with it.
"""

from __future__ import annotations

import os
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

from ..core.durable import remove_durably, write_atomic
from ..core.retention import OWNER_SUFFIX, mark_owner

CHECKPOINT_SUFFIX = ".json"
TEMP_SUFFIX = ".tmp"


def branch_directory(location: str | Path, branch: str) -> Path:
    """`<location>/<branch>`, refusing a branch name that would leave `location` (as CrewAI does)."""
    base = Path(location).resolve()
    target = (Path(location) / branch).resolve()
    if target != base and base not in target.parents:
        raise ValueError(f"Branch name escapes checkpoint directory: {branch!r}")
    return Path(location) / branch


def new_checkpoint_path(location: str | Path, branch: str = "main", parent_id: str | None = None) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    return branch_directory(location, branch) / f"{stamp}_{uuid.uuid4().hex[:8]}_p-{parent_id or 'none'}.json"


def checkpoint_id(path: str | Path) -> str:
    stem = Path(path).stem
    cut = stem.find("_p-")
    return stem[:cut] if cut != -1 else stem


def parent_id(path: str | Path) -> str | None:
    stem = Path(path).stem
    cut = stem.find("_p-")
    parent = stem[cut + 3:] if cut != -1 else "none"
    return None if parent == "none" else parent


def write_checkpoint(path: Path, data: str, owner: str | None) -> Path:
    """Write one checkpoint atomically, its owner's sidecar first."""
    if owner is not None:
        mark_owner(path, owner)
    return write_atomic(path, data)


def _is_checkpoint(path: Path) -> bool:
    return path.name.endswith(CHECKPOINT_SUFFIX) and not path.name.startswith(".") and path.is_file()


def checkpoint_files(location: str | Path, branch: str | None = None) -> list[Path]:
    """Checkpoint files under `location` (of one branch when given), oldest first."""
    root = branch_directory(location, branch) if branch is not None else Path(location)
    if not root.is_dir():
        return []
    pattern = f"*{CHECKPOINT_SUFFIX}" if branch is not None else f"**/*{CHECKPOINT_SUFFIX}"
    found = []
    for path in root.glob(pattern):
        try:
            if _is_checkpoint(path):
                found.append((path.stat().st_mtime_ns, path.name, path))
        except OSError:  # removed while we looked
            continue
    return [path for _, _, path in sorted(found)]


def remove_checkpoint(path: Path) -> bool:
    removed = remove_durably(path)
    remove_durably(Path(str(path) + OWNER_SUFFIX))
    return removed


def prune(location: str | Path, keep: int, *, branch: str = "main") -> int:
    """Keep the newest `keep` checkpoints of `branch`; returns how many were removed."""
    if keep < 0:
        raise ValueError(f"keep is a number of checkpoints >= 0, got {keep}")
    files = checkpoint_files(location, branch)
    doomed = files if keep == 0 else files[:-keep]
    return sum(1 for path in doomed if remove_checkpoint(path))


def remove_leftovers(location: str | Path, *, older_than_s: float = 3600.0) -> int:
    """Remove what crashed writes left behind: temporary files older than `older_than_s` (a
    younger one may belong to a write in progress) and sidecars whose checkpoint is gone."""
    root = Path(location)
    if not root.is_dir():
        return 0
    removed = 0
    cutoff = time.time() - older_than_s
    for path in root.rglob(f".*{TEMP_SUFFIX}"):
        try:
            if path.stat().st_mtime < cutoff and remove_durably(path):
                removed += 1
        except OSError:
            continue
    for sidecar in root.rglob(f"*{OWNER_SUFFIX}"):
        data_file = Path(str(sidecar)[: -len(OWNER_SUFFIX)])
        if data_file.name.endswith(CHECKPOINT_SUFFIX) and not os.path.exists(data_file):
            try:
                if sidecar.stat().st_mtime < cutoff and remove_durably(sidecar):
                    removed += 1
            except OSError:
                continue
    return removed
