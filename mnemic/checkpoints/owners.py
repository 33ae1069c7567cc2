"""Whose state a checkpoint or a flow state is, and which mnemic namespace erases it.

A checkpoint holds a run's inputs and outputs: the data of the user the run was for. The writer
(a provider called by a framework with nothing but a string) cannot tell who that is; the
framework integration can (mnemic's CrewAI integration knows the kickoff's user and its
CrewMemory), so it installs a resolver here and the writers ask it. Layers stay one-way: this
package never imports an integration.

Every place that receives an owned checkpoint is registered with the owner's mnemic Memory
(`Memory.retain`) before the first write, so `forget(user_id=...)` reaches it from any process.
The owner is also stamped into the checkpoint itself (a top-level `"mnemic"` key that CrewAI's
reader ignores), so a restore can bring the run's user back.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.retention import RetainedPlace

log = logging.getLogger("mnemic.checkpoints")

STAMP_KEY = "mnemic"
CHECKPOINTS_LABEL = "checkpoints"
_TAIL_BYTES = 4096


@dataclass(frozen=True)
class Owner:
    """The user a piece of saved state belongs to, and the mnemic Memory that erases it."""

    user_id: str | None
    memory: Any = None
    user_key: str = "user_id"


# Given the input key that names a user when no CrewMemory says who (a flow's `user_key`).
OwnerResolver = Callable[[str], "Owner | None"]
_resolver: OwnerResolver | None = None
_registered: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
_registered_lock = threading.Lock()
_warned_unowned = False


def set_owner_resolver(resolver: OwnerResolver | None) -> None:
    """Install how writers learn the owner of what they are saving (one per process)."""
    global _resolver
    _resolver = resolver


def current_owner(user_key: str = "user_id") -> Owner | None:
    """The owner of the state being saved right now, or None when no integration can tell;
    `user_key` is the kickoff input that names the user when no CrewMemory says who."""
    global _warned_unowned
    if _resolver is None:
        if not _warned_unowned:
            _warned_unowned = True
            log.warning("mnemic checkpoints are being written with no owner, so forget(user_id=...) cannot "
                        "erase them: use the providers through mnemic.integrations.crewai")
        return None
    return _resolver(user_key)


def user_named(value: Any) -> str | None:
    """The user a state field or kickoff input names: a non-blank string, a whole number or a UUID
    (an app that keys its users so; `forget(user_id="42")` must reach them); None when it names
    none. Anything else is refused: read as no user, it would skip the check that keeps one
    user's saved state from another."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, (int, uuid.UUID)) and not isinstance(value, bool):
        return str(value)
    raise TypeError(f"a user id must be a string, a whole number or a UUID, got {type(value).__name__} {value!r:.40}: "
                    "pass the user id as a string")


def retain_once(memory: Any, place: RetainedPlace) -> None:
    """Register `place` with `memory` for erasure (once per Memory object and place)."""
    with _registered_lock:
        seen = _registered.setdefault(memory, set())
        if place.key in seen:
            return
    memory.retain(place)
    with _registered_lock:
        seen.add(place.key)


def stamp(data: str, owner: Owner | None) -> str:
    """`data` (a JSON object) with the owner added as a last top-level key, which CrewAI's reader
    ignores and a lister can read from the file's tail."""
    if owner is None or owner.user_id is None:
        return data
    body = data.rstrip()
    if not body.endswith("}") or body.lstrip() == "{}":
        return data
    note = json.dumps({"user_id": owner.user_id, "user_key": owner.user_key}, ensure_ascii=False)
    return f'{body[:-1]}, "{STAMP_KEY}": {note}}}'


def stamped_user(tail: str) -> str | None:
    """The user stamped into a checkpoint, from its last few kilobytes (or its whole text)."""
    marker = f'"{STAMP_KEY}": '
    position = tail.rfind(marker)
    if position < 0:
        return None
    try:
        note, _ = json.JSONDecoder().raw_decode(tail[position + len(marker):])
    except ValueError:
        return None
    user = note.get("user_id") if isinstance(note, dict) else None
    return user if isinstance(user, str) and user else None


def tail_of(raw: bytes) -> str:
    return raw[-_TAIL_BYTES:].decode("utf-8", errors="ignore")
