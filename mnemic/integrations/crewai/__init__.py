"""mnemic for CrewAI: crews, agents and flows remember per user, in mnemic's store.

    from mnemic import Memory
    from mnemic.integrations.crewai import CrewMemory, SearchMemory, Remember, SearchKnowledge

    memory = Memory("./.mnemic")
    memory.set_policy(mode="auto")
    crew = Crew(agents=..., tasks=..., memory=CrewMemory(memory))
    crew.kickoff(inputs={"user_id": "alice", ...})        # alice's memories, and only hers

See `CrewMemory` for what each CrewAI call does, `use_mnemic_knowledge` for knowledge sources,
`reattach` / `restore_crew` for checkpoints, `JsonCheckpointProvider` / `SqliteCheckpointProvider`
for checkpoints written atomically on any SQLite, `FlowStatePersistence` for `@persist`, and
`replay` for replaying any kept kickoff. Over a CrewMemory, the memory tools CrewAI adds by
itself are mnemic's policy-aware ones (see `mnemic.integrations.crewai.tools`).
"""

try:
    import crewai as _crewai  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "mnemic.integrations.crewai needs CrewAI, which is not installed: pip install 'mnemic[crewai]'"
    ) from exc

from ...checkpoints.crewai_flow_state import FlowOwnerError, FlowStatePersistence
from ...checkpoints.crewai_json import JsonCheckpointProvider
from ...checkpoints.crewai_sqlite import SqliteCheckpointProvider
from ...tools.crewai import Remember, SearchKnowledge, SearchMemory, memory_tools
from .attach import reattach, restore_crew
from .convert import CrewMemoryMatch, to_crewai_record
from .identity import DetachedMemoryError
from .kickoff_replay import replay
from .knowledge import MnemicKnowledgeStorage, use_mnemic_knowledge
from .memory import CrewMemory
from .persistence import MnemicCrewOutput, PersistenceFailure
from .users import UnknownUserError

__all__ = [
    "CrewMemory",
    "CrewMemoryMatch",
    "DetachedMemoryError",
    "FlowOwnerError",
    "FlowStatePersistence",
    "JsonCheckpointProvider",
    "MnemicCrewOutput",
    "MnemicKnowledgeStorage",
    "PersistenceFailure",
    "Remember",
    "SearchKnowledge",
    "SearchMemory",
    "SqliteCheckpointProvider",
    "UnknownUserError",
    "memory_tools",
    "reattach",
    "replay",
    "restore_crew",
    "to_crewai_record",
    "use_mnemic_knowledge",
]

# Importing the integration is opting in: a checkpoint restored before any CrewMemory exists must
# already get the placeholder storage rather than LanceDB, and tools need the run context.
from .kickoff_replay import install as _install_replay
from .persistence import install as _install_persistence
from .runtime import install as _install

_install()
_install_persistence()
_install_replay()
