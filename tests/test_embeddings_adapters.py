"""Adapters around other embedding providers, resolve_embedder, and the hashing test embedder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mnemic.core.embeddings as emb
from mnemic.core import llm
from mnemic.core.embeddings import (
    CallableEmbedder,
    ChromaEmbedder,
    Embedder,
    EmbeddingError,
    HashEmbedder,
    LiteLLMEmbedder,
    MiniLM,
    resolve_embedder,
)
from mnemic.core.embeddings.adapters import onnx_model_cached


def fake_vectors(texts: list[str], dim: int = 6) -> list[list[float]]:
    return [[float(len(t) + 1), *([1.0] * (dim - 1))] for t in texts]


def test_callable_embedder_normalises_and_learns_dimension() -> None:
    e = CallableEmbedder(fake_vectors, name="fake")
    out = e.embed(["a", "abc"])
    assert out.shape == (2, 6) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
    assert e.dimension == 6
    assert isinstance(e, Embedder)


def test_dimension_probe_when_asked_first() -> None:
    calls: list[list[str]] = []

    def fn(texts: list[str]) -> list[list[float]]:
        calls.append(texts)
        return fake_vectors(texts, 5)

    e = CallableEmbedder(fn, name="probe")
    assert e.dimension == 5
    assert len(calls) == 1
    assert CallableEmbedder(fn, name="declared", dimension=5).dimension == 5
    assert len(calls) == 1


@pytest.mark.parametrize(
    ("output", "match"),
    [
        ([[1.0, 2.0]], r"shape"),  # one row for two texts
        ([[1.0, float("nan")], [1.0, 2.0]], r"NaN"),
        ([[1.0, float("inf")], [1.0, 2.0]], r"NaN or infinite"),
        ("not numbers", r"numeric|shape"),
        ([[1.0, 2.0, 3.0], [1.0, 2.0]], r"numeric|shape"),
    ],
)
def test_bad_outputs_raise(output: Any, match: str) -> None:
    e = CallableEmbedder(lambda texts: output, name="broken")
    with pytest.raises(EmbeddingError, match=match):
        e.embed(["x", "y"])


def test_dimension_change_between_calls_is_an_error() -> None:
    dims = iter([4, 5])
    e = CallableEmbedder(lambda texts: fake_vectors(texts, next(dims)), name="fickle")
    e.embed(["a"])
    with pytest.raises(EmbeddingError, match="expected 4"):
        e.embed(["a"])


def test_provider_exception_becomes_embedding_error() -> None:
    def boom(texts: list[str]) -> list[list[float]]:
        raise ConnectionError("refused")

    with pytest.raises(EmbeddingError, match=r"boom-model.*ConnectionError"):
        CallableEmbedder(boom, name="boom-model").embed(["x"])


def test_empty_input_makes_no_call() -> None:
    def never(texts: list[str]) -> list[list[float]]:
        raise AssertionError("called")

    assert CallableEmbedder(never, name="n", dimension=3).embed([]).shape == (0, 3)


def test_single_string_is_rejected() -> None:
    with pytest.raises(TypeError):
        CallableEmbedder(fake_vectors, name="f").embed("a string")


class FakeChromaFunction:
    """Shaped like a chromadb EmbeddingFunction: returns a list of numpy arrays."""

    @staticmethod
    def name() -> str:
        return "fake_fn"

    def __call__(self, input: list[str]) -> list[np.ndarray]:
        return [np.array(v, dtype=np.float32) for v in fake_vectors(input, 8)]


def test_chroma_embedder_wraps_a_function() -> None:
    e = ChromaEmbedder(FakeChromaFunction())
    assert e.name == "chroma/fake_fn"
    assert e.embed(["a", "b", "c"]).shape == (3, 8)
    assert ChromaEmbedder(FakeChromaFunction(), name="custom").name == "custom"


def test_chroma_embedding_function_subclass_resolves_to_chroma_embedder() -> None:
    from chromadb.api.types import EmbeddingFunction

    class Real(EmbeddingFunction[list[str]]):
        def __init__(self) -> None:
            pass

        @staticmethod
        def name() -> str:
            return "real_fn"

        def __call__(self, input: list[str]) -> list[np.ndarray]:
            return [np.array(v, dtype=np.float32) for v in fake_vectors(list(input), 4)]

        def get_config(self) -> dict[str, Any]:
            return {}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> Real:
            return Real()

    resolved = resolve_embedder(Real())
    assert isinstance(resolved, ChromaEmbedder)
    assert resolved.name == "chroma/real_fn"
    assert resolved.embed(["x"]).shape == (1, 4)


def test_onnx_default_refuses_when_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    monkeypatch.setattr(ONNXMiniLM_L6_V2, "DOWNLOAD_PATH", tmp_path / "onnx_models" / "all-MiniLM-L6-v2")
    assert onnx_model_cached() is False
    with pytest.raises(EmbeddingError, match="not cached"):
        ChromaEmbedder.onnx_default()
    assert not (tmp_path / "onnx_models").exists()  # nothing downloaded or created


def test_onnx_corrupt_archive_is_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    root = tmp_path / "all-MiniLM-L6-v2"
    root.mkdir()
    (root / ONNXMiniLM_L6_V2.ARCHIVE_FILENAME).write_bytes(b"truncated download")
    monkeypatch.setattr(ONNXMiniLM_L6_V2, "DOWNLOAD_PATH", root)
    assert onnx_model_cached() is False


def test_litellm_embedder_batches_and_names_model(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, list[str], dict[str, Any]]] = []

    def fake_embed_texts(model: str, texts: list[str], **kwargs: Any) -> list[list[float]]:
        seen.append((model, texts, kwargs))
        return fake_vectors(texts, 7)

    monkeypatch.setattr(llm, "embed_texts", fake_embed_texts)
    e = LiteLLMEmbedder("openai/text-embedding-3-small", batch_size=2, api_base="http://x")
    out = e.embed(["a", "b", "c"])
    assert out.shape == (3, 7)
    assert e.name == "openai/text-embedding-3-small" and e.dimension == 7
    assert [len(t) for _, t, _ in seen] == [2, 1]
    assert all(kw == {"api_base": "http://x"} for _, _, kw in seen)


def test_litellm_errors_name_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(model: str, texts: list[str], **kwargs: Any) -> list[list[float]]:
        raise RuntimeError("connection refused")

    monkeypatch.setattr(llm, "embed_texts", failing)
    with pytest.raises(EmbeddingError, match="ollama/nomic-embed-text"):
        LiteLLMEmbedder("ollama/nomic-embed-text").embed(["x"])


def test_llm_embed_texts_orders_by_index(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    def fake_embedding(model: str, input: list[str], **kwargs: Any) -> dict[str, Any]:
        return {"data": [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]}

    monkeypatch.setattr(litellm, "embedding", fake_embedding)
    assert llm.embed_texts("openai/x", ["first", "second"]) == [[1.0, 0.0], [0.0, 1.0]]


def test_resolve_embedder_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emb, "_default", None)
    default = resolve_embedder(None)
    assert isinstance(default, MiniLM)
    assert resolve_embedder("minilm") is default is emb.default_embedder()
    assert resolve_embedder("sentence-transformers/all-MiniLM-L6-v2") is default

    h = resolve_embedder("hash")
    assert isinstance(h, HashEmbedder) and h.dimension == 256
    h64 = resolve_embedder("hash:64")
    assert isinstance(h64, HashEmbedder) and h64.dimension == 64
    with pytest.raises(ValueError):
        resolve_embedder("hash:big")

    lite = resolve_embedder("openai/text-embedding-3-small")
    assert isinstance(lite, LiteLLMEmbedder) and lite.model == "openai/text-embedding-3-small"

    mine = HashEmbedder(32)
    assert resolve_embedder(mine) is mine
    assert isinstance(resolve_embedder(fake_vectors), CallableEmbedder)
    assert isinstance(resolve_embedder(FakeChromaFunction()), CallableEmbedder)
    with pytest.raises(TypeError):
        resolve_embedder(42)


def test_default_embedder_is_shared_and_lazy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emb, "_default", None)
    first = emb.default_embedder()
    assert first is emb.default_embedder()
    assert first._weights is None  # creating it must not load 90 MB


def test_hash_embedder_is_deterministic_and_lexical() -> None:
    a = HashEmbedder(128).embed(
        ["the cat sat on the mat", "the cat sat on the mat", "quantum chromodynamics"]
    )
    b = HashEmbedder(128).embed(["the cat sat on the mat"])
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[0], a[1])
    assert float(a[0] @ a[1]) > float(a[0] @ a[2])
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-6)


class KeywordEmbeddings:
    """A LangChain-style `Embeddings` (embed_documents / embed_query) without LangChain: one axis
    per keyword, so which text is nearest a query is known."""

    KEYWORDS = ("boat", "dog", "pizza", "rain")

    def __init__(self, model: str = "keywords-v1") -> None:
        self.model = model
        self.document_calls = 0

    def _vector(self, text: str) -> list[float]:
        return [float(text.lower().count(word)) for word in self.KEYWORDS] + [0.1]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.document_calls += 1
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def test_langchain_embeddings_resolve_to_their_own_named_adapter() -> None:
    embedder = resolve_embedder(KeywordEmbeddings())
    assert isinstance(embedder, emb.LangChainEmbedder)
    assert embedder.name.endswith("KeywordEmbeddings:keywords-v1")
    assert embedder.embed(["a dog", "a boat"]).shape == (2, 5)
    assert embedder.dimension == 5
    assert np.allclose(np.linalg.norm(embedder.embed_query("rain"), axis=-1), 1.0)


def test_langchain_embeddings_failures_name_the_model() -> None:
    class Broken(KeywordEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise RuntimeError("quota exceeded")

    with pytest.raises(EmbeddingError, match=r"keywords-v1.*quota exceeded"):
        resolve_embedder(Broken()).embed(["x"])


def test_memory_takes_a_langchain_embeddings_and_remembers_which_one(tmp_path: Path) -> None:
    from mnemic import Memory
    from mnemic.core.store import EmbedderMismatchError

    embeddings = KeywordEmbeddings()
    with Memory(tmp_path, embedder=embeddings) as memory:
        memory.remember("We keep a boat at the marina.", user_id="alice")
        memory.remember("Our dog is called Rex.", user_id="alice")
        assert memory.recall("dog", user_id="alice", limit=1)[0].record.text == "Our dog is called Rex."
    assert embeddings.document_calls > 0
    with pytest.raises(EmbedderMismatchError), Memory(tmp_path, embedder=KeywordEmbeddings("keywords-v2")) as other:
        other.recall("dog", user_id="alice")
