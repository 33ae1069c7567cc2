"""`FlowStatePersistence`: a backend for CrewAI's `@persist` that is durable, bounded and erasable.

    from crewai.flow.persistence import persist
    from mnemic.integrations.crewai import FlowStatePersistence

    @persist(FlowStatePersistence("./flow_states.db", memory=memory))
    class Review(Flow[ReviewState]): ...

CrewAI's `SQLiteFlowPersistence` appends a row per save forever, keeps no owner (a user's flow
states and pending human feedback cannot be erased), and uses the connection defaults. This
backend keeps the same two tables (`flow_states`, `pending_feedback`) plus a `user_id`, and:

- writes each save in one durable transaction (`core.durable`: WAL, `synchronous=FULL`), the
  state row and its pending-feedback marker together, on any SQLite (no `jsonb`);
- keeps the newest `keep_states` states per flow run (the latest is what a resume loads);
- records whose state it is: the user of the running kickoff (mnemic's CrewAI integration tells),
  else the state's own `user_key` field; and registers the database with the owner's mnemic
  namespace (or `memory=`), so `forget(user_id=...)` erases their flow states and pending feedback;
- refuses (`FlowOwnerError`) to load or extend a flow run that is another user's: CrewAI loads
  whatever state a kickoff's `id` names, and apps pass a session id they were given there.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import date, datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crewai.flow.persistence.base import FlowPersistence
from crewai_core.paths import db_storage_path
from pydantic import BaseModel, Field, PrivateAttr, model_validator

from ..core.durable import connect_sqlite, transaction
from ..core.retention import RetainedPlace
from .owners import current_owner, retain_once, user_named

if TYPE_CHECKING:
    from crewai.flow.async_feedback.types import PendingFeedbackContext

FLOW_STATES_LABEL = "flow_states"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS flow_states (id INTEGER PRIMARY KEY AUTOINCREMENT, flow_uuid TEXT NOT NULL, "
    "method_name TEXT NOT NULL, timestamp TEXT NOT NULL, state_json TEXT NOT NULL, user_id TEXT)",
    "CREATE INDEX IF NOT EXISTS idx_flow_states_uuid ON flow_states(flow_uuid)",
    "CREATE TABLE IF NOT EXISTS pending_feedback (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "flow_uuid TEXT NOT NULL UNIQUE, context_json TEXT NOT NULL, state_json TEXT NOT NULL, created_at TEXT NOT NULL, "
    "user_id TEXT)",
    "CREATE INDEX IF NOT EXISTS idx_pending_feedback_uuid ON pending_feedback(flow_uuid)",
)
_PRUNE = (
    "DELETE FROM flow_states WHERE flow_uuid = ? AND id NOT IN "
    "(SELECT id FROM flow_states WHERE flow_uuid = ? ORDER BY id DESC LIMIT ?)"
)


class FlowOwnerError(PermissionError):
    """A kickoff for one user named a flow run (its `id`) whose saved state is another user's.
    Nothing was read or written."""


def _json_default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (set, tuple)):
        return list(value)
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    return str(value)


def _dumps(value: Any) -> str:
    return json.dumps(value, default=_json_default, ensure_ascii=False)


def _state_dict(state_data: dict[str, Any] | BaseModel) -> dict[str, Any]:
    if isinstance(state_data, BaseModel):
        return json.loads(_dumps(state_data.model_dump(mode="json")))
    if isinstance(state_data, dict):
        return dict(state_data)
    raise ValueError(f"state_data must be a Pydantic model or a dict, got {type(state_data).__name__}")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class FlowStatePersistence(FlowPersistence):
    """CrewAI flow persistence on SQLite: one durable transaction per save, the newest
    `keep_states` states per flow run, and an owner on every row for erasure."""

    persistence_type: str = Field(default="FlowStatePersistence")
    db_path: str = Field(default_factory=lambda: str(Path(db_storage_path()) / "mnemic_flow_states.db"))
    keep_states: int = Field(default=20, ge=1, description="States kept per flow run (the newest).")
    user_key: str = Field(default="user_id", description="The state field that names the user, if any.")
    _memory: Any = PrivateAttr(default=None)

    def __init__(self, db_path: str | Path | None = None, /, *, memory: Any = None, **kwargs: Any) -> None:
        if db_path is not None:
            kwargs["db_path"] = str(db_path)
        super().__init__(**kwargs)
        self._memory = memory
        if memory is not None:
            retain_once(memory, self._place())

    @model_validator(mode="after")
    def _setup(self) -> FlowStatePersistence:
        self.init_db()
        return self

    def _place(self) -> RetainedPlace:
        return RetainedPlace(label=FLOW_STATES_LABEL, kind="sqlite", path=self.db_path,
                             tables=("flow_states", "pending_feedback"))

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with closing(connect_sqlite(self.db_path)) as connection:
            yield connection

    def init_db(self) -> None:
        with self._connection() as connection, transaction(connection):
            columns = {row[1] for row in connection.execute("PRAGMA table_info(flow_states)")}
            for statement in _SCHEMA:
                connection.execute(statement)
            if columns and "user_id" not in columns:  # a database CrewAI's own backend created
                connection.execute("ALTER TABLE flow_states ADD COLUMN user_id TEXT")
            pending = {row[1] for row in connection.execute("PRAGMA table_info(pending_feedback)")}
            if "user_id" not in pending:
                connection.execute("ALTER TABLE pending_feedback ADD COLUMN user_id TEXT")

    def _owner_of(self, state: dict[str, Any]) -> str | None:
        owner = current_owner(self.user_key)
        memory = self._memory if self._memory is not None else (owner.memory if owner else None)
        if memory is not None:
            retain_once(memory, self._place())  # before the first row of a user is written
        user = owner.user_id if owner is not None else None
        return user if user is not None else user_named(state.get(self.user_key))

    @staticmethod
    def _refuse_another_users(connection: sqlite3.Connection, table: str, flow_uuid: str, user: str | None) -> None:
        """Refuse when the kickoff's user is known and `flow_uuid` holds rows of another user (rows
        saved with no known user belong to nobody in particular and stay readable)."""
        if user is None:
            return
        other = connection.execute(f"SELECT 1 FROM {table} WHERE flow_uuid = ? AND user_id IS NOT NULL "
                                   "AND user_id != ? LIMIT 1", (flow_uuid, user)).fetchone()
        if other is not None:
            raise FlowOwnerError(
                f"flow run {flow_uuid} holds another user's state; a kickoff for {user!r} cannot load or "
                "continue it. Kick off without an `id` to start a new flow run for this user")

    def _running_user(self) -> str | None:
        owner = current_owner(self.user_key)
        return owner.user_id if owner is not None else None

    def _insert_state(self, connection: sqlite3.Connection, flow_uuid: str, method_name: str, state_json: str,
                      user: str | None) -> None:
        self._refuse_another_users(connection, "flow_states", flow_uuid, user)
        connection.execute(
            "INSERT INTO flow_states (flow_uuid, method_name, timestamp, state_json, user_id) VALUES (?, ?, ?, ?, ?)",
            (flow_uuid, method_name, _now(), state_json, user),
        )
        connection.execute(_PRUNE, (flow_uuid, flow_uuid, self.keep_states))

    def save_state(self, flow_uuid: str, method_name: str, state_data: dict[str, Any] | BaseModel) -> None:
        state = _state_dict(state_data)
        user = self._owner_of(state)
        with self._connection() as connection, transaction(connection):
            self._insert_state(connection, flow_uuid, method_name, _dumps(state), user)

    def load_state(self, flow_uuid: str) -> dict[str, Any] | None:
        with self._connection() as connection:
            self._refuse_another_users(connection, "flow_states", flow_uuid, self._running_user())
            row = connection.execute("SELECT state_json FROM flow_states WHERE flow_uuid = ? ORDER BY id DESC LIMIT 1",
                                     (flow_uuid,)).fetchone()
        if row is None:
            return None
        result = json.loads(row[0])
        return result if isinstance(result, dict) else None

    def save_pending_feedback(self, flow_uuid: str, context: PendingFeedbackContext,
                              state_data: dict[str, Any] | BaseModel) -> None:
        state = _state_dict(state_data)
        user = self._owner_of(state)
        state_json = _dumps(state)
        with self._connection() as connection, transaction(connection):
            self._insert_state(connection, flow_uuid, context.method_name, state_json, user)
            connection.execute(
                "INSERT OR REPLACE INTO pending_feedback (flow_uuid, context_json, state_json, created_at, user_id) "
                "VALUES (?, ?, ?, ?, ?)",
                (flow_uuid, _dumps(context.to_dict()), state_json, _now(), user),
            )

    def load_pending_feedback(self, flow_uuid: str) -> tuple[dict[str, Any], PendingFeedbackContext] | None:
        from crewai.flow.async_feedback.types import PendingFeedbackContext

        with self._connection() as connection:
            self._refuse_another_users(connection, "pending_feedback", flow_uuid, self._running_user())
            row = connection.execute("SELECT state_json, context_json FROM pending_feedback WHERE flow_uuid = ?",
                                     (flow_uuid,)).fetchone()
        if row is None:
            return None
        return json.loads(row[0]), PendingFeedbackContext.from_dict(json.loads(row[1]))

    def clear_pending_feedback(self, flow_uuid: str) -> None:
        with self._connection() as connection, transaction(connection):
            connection.execute("DELETE FROM pending_feedback WHERE flow_uuid = ?", (flow_uuid,))
