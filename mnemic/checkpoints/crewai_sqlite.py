"""`SqliteCheckpointProvider`: CrewAI's SQLite checkpoints on any SQLite, owned by their user.

    from crewai.state.checkpoint_config import CheckpointConfig
    from mnemic.integrations.crewai import SqliteCheckpointProvider

    Crew(..., memory=CrewMemory(memory),
         checkpoint=CheckpointConfig(location="./.checkpoints.db", provider=SqliteCheckpointProvider()))

A subclass of CrewAI's `SqliteProvider` (provider type "sqlite"): same table, same `db#id`
locations, lineage and branches, and CrewAI restores from it, but it works on SQLite 3.40 (no
`jsonb`), writes each checkpoint in one durable transaction (`crewai_db`), records its owner, and
registers the database with the owner's mnemic namespace for erasure before the first write. A
save that fails raises, so CrewAI emits its `CheckpointFailedEvent` and mnemic reports it on the
crew's result, instead of logging it and writing nothing.
"""

from __future__ import annotations

import asyncio

from crewai.state.provider.sqlite_provider import SqliteProvider

from ..core.retention import RetainedPlace
from . import crewai_db
from .owners import CHECKPOINTS_LABEL, current_owner, retain_once, stamp


class SqliteCheckpointProvider(SqliteProvider):
    """CrewAI's SQLite checkpoint provider for every SQLite, with owners and erasure."""

    def checkpoint(self, data: str, location: str, *, parent_id: str | None = None, branch: str = "main") -> str:
        owner = current_owner()
        if owner is not None and owner.memory is not None:
            retain_once(owner.memory, RetainedPlace(label=CHECKPOINTS_LABEL, kind="sqlite", path=str(location),
                                                    tables=(crewai_db.TABLE,)))
        checkpoint_id = crewai_db.insert(location, stamp(data, owner), parent_id=parent_id, branch=branch,
                                         owner=owner.user_id if owner else None)
        return f"{location}#{checkpoint_id}"

    async def acheckpoint(self, data: str, location: str, *, parent_id: str | None = None,
                          branch: str = "main") -> str:
        return await asyncio.to_thread(self.checkpoint, data, location, parent_id=parent_id, branch=branch)

    def prune(self, location: str, max_keep: int, *, branch: str = "main") -> int:
        return crewai_db.prune(location, max_keep, branch=branch)

    def from_checkpoint(self, location: str) -> str:
        path, checkpoint_id = crewai_db.split_location(location)
        return crewai_db.read(path, checkpoint_id)

    async def afrom_checkpoint(self, location: str) -> str:
        return await asyncio.to_thread(self.from_checkpoint, location)
