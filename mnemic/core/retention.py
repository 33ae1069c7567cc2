"""Places beside a namespace's records that keep users' data, so that erasure reaches them too.

Checkpoints, kickoff outputs, flow states and graph threads hold what a user said and what agents
did for them. `Memory.forget(user_id=...)` erases them with the user's records, and must do so from
any process (an operator's `mnemic memory forget` included), not only from the one that wrote them.
So each place is recorded in the namespace's settings as a `RetainedPlace`: a description core can
erase from without importing an agent framework, in one of two layouts every writer follows:

- `sqlite`: a database whose `tables` each have a `user_id` column; the user's rows go in one
  transaction, with `secure_delete` and a WAL truncation so their bytes do not linger. The first
  table counts as the place's items (e.g. checkpoints; the rest hang off them, e.g. pending writes).
- `files`: a directory in which each data file has an owner sidecar, `<file>.mnemic-owner`,
  holding the owner's key (`mark_owner`, written before the file). The user's files and their
  sidecars are removed.

State held somewhere core already reaches (a Chroma collection of the namespace) can instead be
attached for this process only: any object with a `label` and an `erase_user(user_id) -> int`.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from .durable import connect_sqlite, remove_durably, scrub_sqlite, transaction, write_atomic
from .store.naming import owner_key

log = logging.getLogger("mnemic")

OWNER_SUFFIX = ".mnemic-owner"
SETTING_PREFIX = "retained:"
_IDENTIFIER_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


@runtime_checkable
class ErasableState(Protocol):
    """Anything that keeps users' data and can erase one user's share of it."""

    @property
    def label(self) -> str: ...

    def erase_user(self, user_id: str) -> int: ...


@dataclass(frozen=True)
class RetainedPlace:
    """A place on disk that keeps users' data, described so that any process can erase from it."""

    label: str
    kind: Literal["sqlite", "files"]
    path: str
    tables: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.label or not isinstance(self.label, str):
            raise ValueError("a retained place needs a label, e.g. 'checkpoints'")
        if self.kind not in ("sqlite", "files"):
            raise ValueError(f"a retained place's kind is 'sqlite' or 'files', got {self.kind!r}")
        if self.kind == "sqlite" and not self.tables:
            raise ValueError("a sqlite place names the tables that carry a user_id column")
        for table in self.tables:
            if not table or not set(table) <= _IDENTIFIER_OK:
                raise ValueError(f"table names are plain identifiers, got {table!r}")
        object.__setattr__(self, "path", str(Path(self.path).expanduser().resolve()))

    @property
    def key(self) -> str:
        digest = hashlib.sha256(f"{self.kind}|{self.path}|{self.label}".encode()).hexdigest()[:20]
        return SETTING_PREFIX + digest

    def to_setting(self) -> dict[str, Any]:
        return {"label": self.label, "kind": self.kind, "path": self.path, "tables": list(self.tables)}

    @classmethod
    def from_setting(cls, value: Mapping[str, Any]) -> RetainedPlace:
        return cls(label=str(value["label"]), kind=value["kind"], path=str(value["path"]),
                   tables=tuple(value.get("tables") or ()))

    def erase_user(self, user_id: str) -> int:
        """Erase the user's share; returns how many items went (0 when the place is gone)."""
        if self.kind == "sqlite":
            return erase_sqlite_rows(Path(self.path), self.tables, user_id)
        return erase_owned_files(Path(self.path), user_id)


@dataclass
class ErasureOutcome:
    """What one erasure removed beside the records: counts per label, and places it could not reach."""

    retained: dict[str, int] = field(default_factory=dict)
    unreachable: list[str] = field(default_factory=list)


class ErasureReport(int):
    """`forget()`'s answer. As an int it is the number of records erased (as it always was); it also
    says what else went: `retained` counts per place label (checkpoints, kickoffs, ...), and
    `unreachable` names places that could not be erased here (and why)."""

    retained: dict[str, int]
    unreachable: list[str]

    def __new__(cls, records: int, outcome: ErasureOutcome | None = None) -> ErasureReport:
        report = super().__new__(cls, records)
        report.retained = dict(outcome.retained) if outcome else {}
        report.unreachable = list(outcome.unreachable) if outcome else []
        return report

    @property
    def records(self) -> int:
        return int(self)

    def __repr__(self) -> str:
        parts = [f"records={int(self)}", *(f"{label}={n}" for label, n in sorted(self.retained.items()))]
        if self.unreachable:
            parts.append(f"unreachable={self.unreachable!r}")
        return f"ErasureReport({', '.join(parts)})"


def mark_owner(data_file: str | Path, user_id: str) -> None:
    """Record who owns `data_file` (call before writing it, so a file never exists unowned)."""
    write_atomic(Path(str(data_file) + OWNER_SUFFIX), owner_key(user_id))


def owner_of(data_file: str | Path) -> str | None:
    """The owner key recorded for `data_file`, or None."""
    try:
        return Path(str(data_file) + OWNER_SUFFIX).read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None


def owned_files(directory: Path, user_id: str) -> Iterator[Path]:
    wanted = owner_key(user_id)
    if not directory.is_dir():
        return
    for sidecar in sorted(directory.rglob("*" + OWNER_SUFFIX)):
        try:
            if sidecar.read_text(encoding="utf-8").strip() == wanted:
                yield Path(str(sidecar)[: -len(OWNER_SUFFIX)])
        except OSError:
            continue


def erase_owned_files(directory: Path, user_id: str) -> int:
    erased = 0
    for data_file in list(owned_files(directory, user_id)):
        if remove_durably(data_file):
            erased += 1
        remove_durably(Path(str(data_file) + OWNER_SUFFIX))
    return erased


def erase_sqlite_rows(database: Path, tables: tuple[str, ...], user_id: str) -> int:
    if not database.exists():
        return 0
    connection = connect_sqlite(database)
    try:
        present = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        counted = 0
        with transaction(connection):
            for position, table in enumerate(tables):
                if table not in present:
                    continue
                removed = connection.execute(f'DELETE FROM "{table}" WHERE user_id = ?', (user_id,)).rowcount
                if position == 0:
                    counted = removed
        scrub_sqlite(connection)
        return counted
    finally:
        connection.close()


def erase_everywhere(places: list[ErasableState], user_id: str) -> ErasureOutcome:
    """Erase the user from every place; a place that fails is named, the others still run."""
    outcome = ErasureOutcome()
    for place in places:
        try:
            removed = place.erase_user(user_id)
        except (OSError, sqlite3.Error, RuntimeError, ValueError) as exc:
            where = getattr(place, "path", None) or type(place).__name__
            outcome.unreachable.append(f"{place.label} at {where}: {type(exc).__name__}: {exc}")
            log.warning("could not erase a user's %s at %s: %s", place.label, where, exc)
            continue
        outcome.retained[place.label] = outcome.retained.get(place.label, 0) + removed
    return outcome
