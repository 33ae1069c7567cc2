"""mnemic: long-term memory for AI agents, on Chroma, offline by default.

    from mnemic import Memory
    with Memory("./.mnemic") as memory:
        memory.remember("We chose PostgreSQL for the user database.", user_id="alice")
        for match in memory.recall("which database?", user_id="alice"):
            print(match.score, match.record.text, match.explanation)

Agent frameworks are optional: `mnemic.integrations.crewai` and `mnemic.integrations.langgraph`
import them only when used.
"""

from .core.documents import DocumentError, UnsupportedDocumentError
from .core.embeddings import (
    CallableEmbedder,
    ChromaEmbedder,
    Embedder,
    EmbeddingError,
    HashEmbedder,
    LangChainEmbedder,
    LiteLLMEmbedder,
    MiniLM,
    WeightsMismatchError,
    WeightsNotFoundError,
)
from .core.history import HistoryEntry
from .core.knowledge import IngestResult, KnowledgeChunk, KnowledgeHit, KnowledgeStore, RefusedChunk
from .core.lessons import Lesson, LessonPlace, LessonStore
from .core.llm import LLMOutputError
from .core.local_db import CorruptLocalDatabaseError
from .core.lock import StoreLockedError
from .core.memory import Memory
from .core.policy import EffectivePolicy, MemoryPolicy, PolicyError
from .core.ranking import RecallWeights
from .core.record_writer import ConcurrentChangeError
from .core.records import MemoryMatch, MemoryRecord, ScoreBreakdown
from .core.retention import ErasureReport, RetainedPlace
from .core.safety import NestedTooDeeplyError, SecretRefusedError
from .core.stats import WriteStats
from .core.store import EmbedderMismatchError, NamespaceCollisionError
from .core.views import MemoryView
from .core.writer import BackgroundWriteError

__version__ = "0.1.0"

__all__ = [
    "BackgroundWriteError",
    "CallableEmbedder",
    "ChromaEmbedder",
    "ConcurrentChangeError",
    "CorruptLocalDatabaseError",
    "DocumentError",
    "EffectivePolicy",
    "Embedder",
    "EmbedderMismatchError",
    "EmbeddingError",
    "ErasureReport",
    "HashEmbedder",
    "HistoryEntry",
    "IngestResult",
    "KnowledgeChunk",
    "KnowledgeHit",
    "KnowledgeStore",
    "LLMOutputError",
    "LangChainEmbedder",
    "Lesson",
    "LessonPlace",
    "LessonStore",
    "LiteLLMEmbedder",
    "Memory",
    "MemoryMatch",
    "MemoryPolicy",
    "MemoryRecord",
    "MemoryView",
    "MiniLM",
    "NamespaceCollisionError",
    "NestedTooDeeplyError",
    "PolicyError",
    "RecallWeights",
    "RefusedChunk",
    "RetainedPlace",
    "ScoreBreakdown",
    "SecretRefusedError",
    "StoreLockedError",
    "UnsupportedDocumentError",
    "WeightsMismatchError",
    "WeightsNotFoundError",
    "WriteStats",
    "__version__",
]
