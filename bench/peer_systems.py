"""The memories a user would pick instead of mnemic, set up offline for `bench_peers.py`.

Each class here follows `bench_locomo.System` (load a conversation, search it, close) and keeps its
peer as a user would run it: its own store, its own search call, its defaults except where the
benchmark needs it offline and comparable. Every peer gets mnemic's MiniLM through the peer's own
embedder hook, so only storage and ranking differ. A peer that could call an LLM is given one that
counts the call and refuses it, so "0 LLM calls" is checked rather than assumed.

This module is benchmark scaffolding: nothing in `mnemic/` imports it, and the peers' packages are
the optional `peers` extra (`pip install 'mnemic[peers]'`).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_locomo import ChromaSystem, Conversation, CrewAISystem, MnemicSystem, System, Turn

PEERS_EXTRA = "pip install 'mnemic[peers]'"

# Qdrant's BM25 model is a folder on the Hugging Face hub holding no weights: an empty config.json
# and one stopword file per language. fastembed refuses a cached copy that lacks any of these files.
_BM25_REPO_FOLDER = "models--Qdrant--bm25"
_BM25_REVISION = "offline-" + "0" * 32


class PeerUnavailable(RuntimeError):
    """A peer cannot run here (a package or an extension is missing); the message says how to fix it."""


def offline_environment(workdir: Path) -> dict[str, str]:
    """Environment that keeps every peer off the network and out of the user's home directory."""
    return {
        "MEM0_TELEMETRY": "False",  # posthog events and the remote "notice" config fetch
        "MEM0_DIR": str(workdir / "mem0-home"),
        "HF_HUB_OFFLINE": "1",  # fastembed then only reads its cache
        "FASTEMBED_CACHE_PATH": str(workdir / "fastembed-cache"),
        "ANONYMIZED_TELEMETRY": "False",
        "CREWAI_DISABLE_TELEMETRY": "true",
        "OTEL_SDK_DISABLED": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "TOKENIZERS_PARALLELISM": "false",
    }


def write_offline_bm25_model(cache_dir: Path) -> Path:
    """Lay out fastembed's `Qdrant/bm25` in its cache as the hub would, without the hub.

    The English stopwords are NLTK's list of 179 words as chromadb ships it for its own BM25
    (the list the hub folder carries for English); stemming is fastembed's Snowball, unchanged.
    The other languages' files are left empty: fastembed insists they exist, mem0 reads English.
    """
    from chromadb.utils.embedding_functions.schemas.bm25_tokenizer import DEFAULT_ENGLISH_STOPWORDS
    from fastembed.sparse.bm25 import supported_bm25_models

    repo = cache_dir / _BM25_REPO_FOLDER
    snapshot = repo / "snapshots" / _BM25_REVISION
    snapshot.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(_BM25_REVISION, encoding="utf-8")
    description = supported_bm25_models[0]
    for name in [description.model_file, *description.additional_files]:
        if name == "config.json":
            text = "{}"
        elif name == "english.txt":
            text = "\n".join(DEFAULT_ENGLISH_STOPWORDS) + "\n"
        else:
            text = ""
        (snapshot / name).write_text(text, encoding="utf-8")
    return snapshot


def _langchain_embeddings(embedder: Any) -> Any:
    """mnemic's embedder as a langchain `Embeddings`: the hook Mem0 and LangGraph both accept."""
    from langchain_core.embeddings import Embeddings

    class MnemicEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [list(map(float, v)) for v in embedder.embed(list(texts))]

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    return MnemicEmbeddings()


def _refusing_chat_model(on_call: Callable[[], None]) -> Any:
    """A langchain chat model that records every call and refuses it: the benchmark runs offline."""
    from langchain_core.language_models.chat_models import BaseChatModel

    class RefusingChatModel(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "offline-refusing"

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            on_call()
            raise RuntimeError("offline benchmark: no LLM")

    return RefusingChatModel()


def _by_session(turns: Sequence[Turn]) -> list[list[Turn]]:
    sessions: dict[int, list[Turn]] = {}
    for t in turns:
        sessions.setdefault(t.session, []).append(t)
    return list(sessions.values())


class Mem0System:
    """Mem0 OSS (`mem0ai`): `add(..., infer=False)` per turn, `search(filters={"user_id": ...})`.

    `infer=False` stores each message as it is: no LLM extraction, the only way Mem0 runs without a
    model. Its LLM slot holds a chat model that counts calls and refuses them. On Qdrant (Mem0's
    default store, local, on disk) Mem0 adds a BM25 keyword score to the semantic one when fastembed
    loads `Qdrant/bm25`: `keyword=True` writes that model into fastembed's cache from local files.
    With `keyword=False` and an empty cache offline, Mem0 turns keyword search off by itself, as
    it does without fastembed or the hub. Mem0 on Chroma has no keyword search. Search keeps Mem0's
    defaults (threshold 0.1: hits whose semantic score is below it are dropped). spaCy is not
    installed, so Mem0's lemmatiser passes text through and its entity boost is off (with
    `infer=False` Mem0 links no entities anyway).
    """

    def __init__(self, workdir: Path, embedder: Any, *, store: str = "qdrant", keyword: bool = True) -> None:
        try:
            from mem0 import Memory
        except ImportError as exc:
            raise PeerUnavailable(f"mem0ai is not installed ({exc}); {PEERS_EXTRA}") from exc
        self.name = f"mem0-{store}"
        self.llm_calls = 0
        home = workdir / f"mem0-{store}"
        home.mkdir(parents=True, exist_ok=True)
        if store == "qdrant":
            vector_store = {
                "provider": "qdrant",
                "config": {
                    "path": str(home / "qdrant"),
                    "on_disk": True,
                    "collection_name": "locomo",
                    "embedding_model_dims": int(embedder.dimension),
                },
            }
        elif store == "chroma":
            vector_store = {"provider": "chroma", "config": {"path": str(home / "chroma"), "collection_name": "locomo"}}
        else:
            raise ValueError(f"unknown Mem0 store {store!r}: 'qdrant' or 'chroma'")
        if store == "qdrant" and keyword:
            self._prepare_bm25()
        logging.getLogger("mem0").setLevel(logging.ERROR)  # one "spaCy is not installed" warning per call

        def count_call() -> None:
            self.llm_calls += 1

        self.memory = Memory.from_config(
            {
                "vector_store": vector_store,
                "embedder": {"provider": "langchain", "config": {"model": _langchain_embeddings(embedder)}},
                "llm": {"provider": "langchain", "config": {"model": _refusing_chat_model(count_call)}},
                "history_db_path": str(home / "history.db"),
            }
        )

    @staticmethod
    def _prepare_bm25() -> None:
        try:
            import fastembed  # noqa: F401
        except ImportError:
            return  # Mem0 logs that keyword search is off and searches semantically
        # Mem0 builds fastembed's encoder from the model name alone, so the model must be in the cache.
        cache = os.environ.get("FASTEMBED_CACHE_PATH")
        if not cache:
            raise PeerUnavailable("FASTEMBED_CACHE_PATH is not set: run Mem0 through bench_peers.py")
        write_offline_bm25_model(Path(cache))

    def load(self, conv: Conversation) -> None:
        for t in conv.turns:
            self.memory.add(t.text, user_id=conv.conv_id, metadata={"dia_id": t.dia_id}, infer=False)

    def finish_loading(self) -> None:
        pass

    def keyword_search_works(self, conv: Conversation) -> bool:
        """Whether Mem0's store answers its keyword (BM25) search for this user (None: it has none)."""
        probe = conv.turns[0].text
        return self.memory.vector_store.keyword_search(probe, top_k=1, filters={"user_id": conv.conv_id}) is not None

    def search(self, conv: Conversation, query: str, k: int) -> list[str]:
        found = self.memory.search(query, filters={"user_id": conv.conv_id}, top_k=k)
        return [str((hit.get("metadata") or {}).get("dia_id")) for hit in found["results"]]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.memory.close()


class LangGraphStoreSystem:
    """LangGraph's own long-term store with its semantic index: `InMemoryStore` or `SqliteStore`.

    One namespace per conversation, one item per turn (`{"text": ...}` indexed), written with one
    `batch` of puts per session (the store embeds a batch in one call). `SqliteStore` searches with
    the `sqlite-vec` extension; where this Python's `sqlite3` cannot load extensions it runs on
    `pysqlite3` (a newer SQLite built with them), and says so in `backend`.
    """

    def __init__(self, workdir: Path, embedder: Any, *, backend: str = "memory") -> None:
        try:
            from langgraph.store.memory import InMemoryStore
        except ImportError as exc:
            raise PeerUnavailable(f"langgraph is not installed ({exc}); pip install 'mnemic[langgraph]'") from exc
        self.name = f"langgraph-{backend}"
        # SqliteStore (langgraph-checkpoint-sqlite 3.1) reads `text_fields`, not the documented `fields`
        # (langgraph issue 8808): given only `fields` it embeds the whole JSON value instead of the text.
        index = {
            "dims": int(embedder.dimension),
            "embed": _langchain_embeddings(embedder),
            "fields": ["text"],
            "text_fields": ["text"],
        }
        self._conn: Any = None
        if backend == "memory":
            self.store: Any = InMemoryStore(index=index)  # type: ignore[arg-type]
            self.backend = "InMemoryStore (numpy cosine)"
        elif backend == "sqlite":
            try:
                from langgraph.store.sqlite import SqliteStore
            except ImportError as exc:
                raise PeerUnavailable(f"langgraph-checkpoint-sqlite is not installed ({exc}); {PEERS_EXTRA}") from exc
            self._conn, driver = _extension_capable_sqlite(workdir / "langgraph-store.sqlite")
            self.store = SqliteStore(self._conn, index=index)  # type: ignore[arg-type]
            try:
                self.store.setup()  # loads sqlite-vec
            except Exception as exc:
                raise PeerUnavailable(f"SqliteStore's vector extension did not load: {exc}") from exc
            version = self._conn.execute("select vec_version()").fetchone()[0]
            self.backend = f"SqliteStore on {driver}, sqlite-vec {version}"
        else:
            raise ValueError(f"unknown LangGraph store {backend!r}: 'memory' or 'sqlite'")

    def load(self, conv: Conversation) -> None:
        from langgraph.store.base import PutOp

        for session in _by_session(conv.turns):
            self.store.batch([PutOp(("locomo", conv.conv_id), t.dia_id, {"text": t.text}) for t in session])

    def finish_loading(self) -> None:
        pass

    def search(self, conv: Conversation, query: str, k: int) -> list[str]:
        return [item.key for item in self.store.search(("locomo", conv.conv_id), query=query, limit=k)]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


def _extension_capable_sqlite(path: Path) -> tuple[Any, str]:
    """A connection that can load sqlite-vec, opened as `SqliteStore.from_conn_string` opens one."""
    import sqlite3

    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    if hasattr(conn, "enable_load_extension"):
        return conn, f"sqlite3 {sqlite3.sqlite_version}"
    conn.close()
    try:
        from pysqlite3 import dbapi2 as pysqlite3
    except ImportError as exc:
        raise PeerUnavailable(
            "this Python's sqlite3 was built without extension loading, which SqliteStore needs for "
            f"sqlite-vec, and pysqlite3-binary is not installed; {PEERS_EXTRA}"
        ) from exc
    conn = pysqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    return conn, f"pysqlite3 {pysqlite3.sqlite_version}"


@dataclass(frozen=True)
class Peer:
    """One system of the table: how to build it, what exactly runs, and its own environment."""

    build: Callable[[Path, Any], System]
    about: str
    env: Callable[[Path], dict[str, str]] = lambda workdir: {}


PEERS: dict[str, Peer] = {
    "mnemic": Peer(MnemicSystem, "mnemic defaults: remember_many per turn, hybrid recall"),
    "chroma": Peer(ChromaSystem, "plain Chroma, dense top-k with a user filter"),
    "crewai": Peer(CrewAISystem, "crewai Memory (LanceDB), shallow recall, explicit fields, no LLM"),
    "mem0-qdrant": Peer(
        lambda w, e: Mem0System(w, e, store="qdrant"), "Mem0 OSS, local Qdrant on disk, infer=False, BM25 on"
    ),
    "mem0-qdrant-dense": Peer(
        lambda w, e: Mem0System(w, e, store="qdrant", keyword=False),
        "Mem0 OSS, local Qdrant on disk, infer=False, no BM25 model: semantic only, as offline out of the box",
        env=lambda workdir: {"FASTEMBED_CACHE_PATH": str(workdir / "empty-fastembed-cache")},
    ),
    "mem0-chroma": Peer(
        lambda w, e: Mem0System(w, e, store="chroma"), "Mem0 OSS on Chroma, infer=False (no keyword search there)"
    ),
    "langgraph-memory": Peer(
        lambda w, e: LangGraphStoreSystem(w, e, backend="memory"), "LangGraph InMemoryStore with a semantic index"
    ),
    "langgraph-sqlite": Peer(
        lambda w, e: LangGraphStoreSystem(w, e, backend="sqlite"), "LangGraph SqliteStore with sqlite-vec"
    ),
}
