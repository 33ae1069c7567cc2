"""`JsonCheckpointProvider`: CrewAI's JSON checkpoints, written atomically and owned by their user.

    from crewai.state.checkpoint_config import CheckpointConfig
    from mnemic.integrations.crewai import JsonCheckpointProvider

    Crew(..., memory=CrewMemory(memory),
         checkpoint=CheckpointConfig(location="./.checkpoints", provider=JsonCheckpointProvider()))

A subclass of CrewAI's `JsonProvider` (so `CheckpointConfig` accepts it and the provider type stays
"json"): same files, same lineage and branches, and CrewAI restores them unchanged. Each file is
written whole or not at all (`crewai_files`), carries its owner, and its directory is registered
with the owner's mnemic namespace for erasure before the first write. A save that fails raises,
so CrewAI emits its `CheckpointFailedEvent`; mnemic's integration also reports it on the crew's
result. `prune` removes the owner sidecars with the files.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from crewai.state.provider.json_provider import JsonProvider

from ..core.retention import RetainedPlace
from . import crewai_files
from .owners import CHECKPOINTS_LABEL, current_owner, retain_once, stamp


class JsonCheckpointProvider(JsonProvider):
    """CrewAI's JSON checkpoint provider with atomic writes, owners and erasure."""

    def checkpoint(self, data: str, location: str, *, parent_id: str | None = None, branch: str = "main") -> str:
        path = crewai_files.new_checkpoint_path(location, branch, parent_id)
        owner = current_owner()
        if owner is not None and owner.memory is not None:
            retain_once(owner.memory, RetainedPlace(label=CHECKPOINTS_LABEL, kind="files", path=str(location)))
        crewai_files.write_checkpoint(path, stamp(data, owner), owner.user_id if owner else None)
        return str(path)

    async def acheckpoint(self, data: str, location: str, *, parent_id: str | None = None,
                          branch: str = "main") -> str:
        return await asyncio.to_thread(self.checkpoint, data, location, parent_id=parent_id, branch=branch)

    def prune(self, location: str, max_keep: int, *, branch: str = "main") -> int:
        return crewai_files.prune(location, max_keep, branch=branch)

    def from_checkpoint(self, location: str) -> str:
        return Path(location).read_text(encoding="utf-8")

    async def afrom_checkpoint(self, location: str) -> str:
        return await asyncio.to_thread(self.from_checkpoint, location)
