"""The numpy MiniLM against vectors computed by sentence-transformers on torch (the golden fixture).

Missing weights fail these tests on purpose: a skipped golden test would hide a broken default
embedder. Run `mnemic models fetch` first.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mnemic.core.embeddings import MiniLM, WeightsNotFoundError, find_weights

pytestmark = pytest.mark.minilm

_REPO = Path(__file__).resolve().parents[1]


def _golden_path() -> Path:
    explicit = os.environ.get("MNEMIC_GOLDEN")
    if explicit:
        return Path(explicit)
    shared = _REPO.parent / "shared" / "fixtures" / "minilm_golden.json"
    return shared if shared.is_file() else Path(__file__).parent / "fixtures" / "minilm_golden.json"


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_golden_path().read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def model() -> MiniLM:
    try:
        find_weights()
    except WeightsNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)
    embedder = MiniLM(batch_size=8)
    embedder.load()
    return embedder


def test_golden_fixture_matches(model: MiniLM, golden: dict[str, Any]) -> None:
    assert golden["safetensors_sha256"] == "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
    assert golden["max_seq_length"] == 256 and golden["pooling"] == "mean" and golden["normalize"]
    cases = golden["cases"]
    assert len(cases) == 42
    texts = [c["text"] for c in cases]
    reference = np.array([c["embedding"] for c in cases], dtype=np.float64)
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)

    assert [len(ids) for ids in model.tokenize(texts)] == [c["num_tokens"] for c in cases]
    vectors = model.embed(texts)
    assert vectors.shape == (42, 384) and vectors.dtype == np.float32
    cosines = np.sum(vectors.astype(np.float64) * reference, axis=1)
    worst = int(np.argmin(cosines))
    print(f"golden min cosine {cosines.min():.10f} (case {worst}: {texts[worst][:40]!r})")
    assert cosines.min() >= 0.9999


def test_truncation_at_256_tokens(model: MiniLM) -> None:
    long_text = "memory " * 600
    assert len(model.tokenize([long_text])[0]) == 256
    # Everything past the 256th token is ignored, as sentence-transformers does.
    a, b = model.embed([long_text, long_text + " completely different ending about volcanoes"])
    assert float(a @ b) > 0.99999


def test_batch_and_single_agree(model: MiniLM) -> None:
    texts = ["short", "a somewhat longer sentence about the weather in Lisbon", "", "日本語のテキスト"] * 3
    batched = model.embed(texts)
    single = np.vstack([model.embed([t]) for t in texts])
    assert np.max(np.abs(batched - single)) < 1e-5


def test_unit_norms_and_order_preserved(model: MiniLM) -> None:
    # Lengths deliberately unsorted: the embedder sorts internally and must put results back.
    texts = [f"word {'x ' * n}end" for n in (40, 1, 17, 3, 60, 0, 25, 9, 33, 2)]
    vectors = model.embed(texts)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(model.embed([text])[0], vector, atol=1e-5)


def test_strip_and_empty(model: MiniLM) -> None:
    a, b, empty = model.embed(["  hello world \n", "hello world", ""])
    assert float(a @ b) > 0.99999
    assert np.isfinite(empty).all() and abs(float(np.linalg.norm(empty)) - 1.0) < 1e-5
    assert model.embed([]).shape == (0, 384)


def test_threads_share_one_model(model: MiniLM) -> None:
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"sentence number {i} about topic {i % 7}" for i in range(40)]
    expected = model.embed(texts)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda i: model.embed(texts[i : i + 10]), range(0, 40, 10)))
    np.testing.assert_allclose(np.vstack(results), expected, atol=1e-5)


def test_lazy_load_is_thread_safe() -> None:
    from concurrent.futures import ThreadPoolExecutor

    try:
        find_weights()
    except WeightsNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)
    fresh = MiniLM()
    with ThreadPoolExecutor(max_workers=3) as pool:
        outs = list(pool.map(lambda _: fresh.embed(["same text"]), range(3)))
    assert all(np.array_equal(outs[0], o) for o in outs)
    fresh.close()
