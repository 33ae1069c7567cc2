"""What checkpoints a location holds, what one of them contains, and pruning: for operators.

A location is what `CheckpointConfig(location=...)` names: a directory of JSON checkpoints, or a
SQLite file. Both layouts are CrewAI's (`crewai_files`, `crewai_db`), whoever wrote them, so this
lists CrewAI's own checkpoints too. Nothing here imports a framework; `mnemic checkpoints` uses it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core.retention import owner_of
from ..core.store.naming import owner_key
from . import crewai_db, crewai_files
from .owners import stamped_user, tail_of


@dataclass(frozen=True)
class CheckpointInfo:
    """One checkpoint, without its data. `restore_from` is what `CheckpointConfig` takes."""

    id: str
    restore_from: str
    location: str
    format: str
    branch: str
    parent_id: str | None
    created_at: str
    size: int
    user_id: str | None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _iso_from_id(checkpoint_id: str) -> str:
    try:
        stamp = datetime.strptime(checkpoint_id.split("_", 1)[0], "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return ""
    return stamp.isoformat()


def _json_info(path: Path, location: Path | None = None) -> CheckpointInfo:
    """A JSON checkpoint's info; without its `location`, its directory is taken as the branch."""
    stat = path.stat()
    with open(path, "rb") as handle:
        if stat.st_size > 4096:
            handle.seek(-4096, 2)
        tail = tail_of(handle.read())
    if location is None:
        location = path.parent.parent
    branch = path.parent.relative_to(location).as_posix() if path.parent != location else ""
    return CheckpointInfo(
        id=crewai_files.checkpoint_id(path), restore_from=str(path), location=str(location), format="json",
        branch=branch, parent_id=crewai_files.parent_id(path),
        created_at=datetime.fromtimestamp(stat.st_mtime, tz=timezone.utc).isoformat(), size=stat.st_size,
        user_id=stamped_user(tail),
    )


def _is_owned_by(info: CheckpointInfo, user_id: str) -> bool:
    if info.user_id is not None:
        return info.user_id == user_id
    return info.format == "json" and owner_of(info.restore_from) == owner_key(user_id)


def list_checkpoints(location: str | Path, *, branch: str | None = None,
                     user_id: str | None = None) -> list[CheckpointInfo]:
    """Checkpoints at `location`, oldest first (of one branch, of one user, when given)."""
    target = Path(location).expanduser()
    if not target.exists():
        raise FileNotFoundError(f"no checkpoints at {target}: give the location CheckpointConfig(location=...) names")
    found: list[CheckpointInfo]
    if crewai_db.is_database(target):
        found = [
            CheckpointInfo(
                id=row.id, restore_from=f"{target}#{row.id}", location=str(target), format="sqlite",
                branch=row.branch, parent_id=row.parent_id, created_at=_iso_from_id(row.id), size=row.size,
                user_id=row.user_id,
                note=("binary JSON written by CrewAI's SqliteProvider (SQLite >= 3.45 needed to read it)"
                      if row.binary else None),
            )
            for row in crewai_db.rows(target, branch=branch)
        ]
    elif target.is_dir():
        found = [_json_info(path, target) for path in crewai_files.checkpoint_files(target, branch)]
    else:
        raise ValueError(f"{target} is neither a checkpoint directory nor a SQLite checkpoint database")
    if user_id is not None:
        found = [info for info in found if _is_owned_by(info, user_id)]
    return found


def find_checkpoint(reference: str, locations: Iterable[str | Path] = ()) -> CheckpointInfo:
    """A checkpoint by its `restore_from` (a JSON file or `db#id`) or by its id in `locations`."""
    path = Path(reference).expanduser()
    if path.is_file() and path.name.endswith(crewai_files.CHECKPOINT_SUFFIX):
        return _json_info(path)
    if "#" in reference:
        db_path, checkpoint_id = crewai_db.split_location(reference)
        matches = [i for i in list_checkpoints(db_path) if i.id == checkpoint_id]
        if matches:
            return matches[0]
        raise LookupError(f"no checkpoint {checkpoint_id} in {db_path}")
    found = [info for location in locations for info in list_checkpoints(location) if info.id.startswith(reference)]
    exact = [info for info in found if info.id == reference]
    if len(exact) == 1 or len(found) == 1:
        return (exact or found)[0]
    if found:
        raise LookupError(f"{reference!r} names {len(found)} checkpoints: give more of the id, or its path")
    raise LookupError(f"no checkpoint {reference!r}: give its path (or db#id), or the location that holds it")


def read_data(info: CheckpointInfo) -> str:
    if info.format == "sqlite":
        db_path, checkpoint_id = crewai_db.split_location(info.restore_from)
        return crewai_db.read(db_path, checkpoint_id)
    return Path(info.restore_from).read_text(encoding="utf-8")


def summarize(data: str) -> dict[str, Any]:
    """What a checkpoint holds, in brief: its entities (crews with their inputs and which tasks are
    done, flows with their completed methods), the trigger, the user, the number of events."""
    try:
        state = json.loads(data)
    except ValueError as exc:
        return {"readable": False, "error": f"not valid JSON: {exc}"}
    entities = []
    for entity in state.get("entities") or []:
        kind = entity.get("entity_type")
        item: dict[str, Any] = {"type": kind, "name": entity.get("name"), "id": entity.get("id")}
        if kind == "crew":
            item["inputs"] = entity.get("checkpoint_inputs")
            item["tasks"] = [{"task": (t.get("name") or " ".join(str(t.get("description") or "").split()))[:80],
                              "done": t.get("output") is not None} for t in entity.get("tasks") or []]
        elif kind == "flow":
            item["completed_methods"] = sorted(entity.get("checkpoint_completed_methods") or [])
        entities.append(item)
    stamp = state.get("mnemic") if isinstance(state.get("mnemic"), dict) else {}
    return {
        "readable": True, "crewai_version": state.get("crewai_version"), "branch": state.get("branch"),
        "parent_id": state.get("parent_id"), "trigger": state.get("trigger"), "user_id": stamp.get("user_id"),
        "entities": entities, "events": len(((state.get("event_record") or {}).get("nodes")) or {}),
    }


def prune_checkpoints(location: str | Path, keep: int, *, branch: str | None = None) -> dict[str, int]:
    """Keep the newest `keep` checkpoints of each branch (or of `branch`); also clear leftovers of
    crashed writes in a JSON location. Returns counts."""
    target = Path(location).expanduser()
    if crewai_db.is_database(target):
        names = [branch] if branch is not None else crewai_db.branches(target)
        return {"removed": sum(crewai_db.prune(target, keep, branch=b) for b in names), "leftovers": 0}
    if not target.is_dir():
        raise FileNotFoundError(f"no checkpoints at {target}")
    names = [branch] if branch is not None else sorted(
        {info.branch for info in list_checkpoints(target)})
    removed = sum(crewai_files.prune(target, keep, branch=b) for b in names)
    return {"removed": removed, "leftovers": crewai_files.remove_leftovers(target)}
