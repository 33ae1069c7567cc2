"""all-MiniLM-L6-v2 computed with numpy from the official safetensors: no torch, no ONNX.

Matches sentence-transformers (max_seq_length 256, mean pooling, L2 normalisation) to float32
rounding. Speed comes from three things measured on a 2-core machine: sorting inputs by length so
a batch carries little padding, elementwise work done in place on cache-sized chunks, and several
worker threads each running BLAS single-threaded (numpy releases the GIL, so the elementwise work
is parallel too, which multi-threaded BLAS alone does not give).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .base import EmbeddingError, as_unit_matrix, check_texts

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
MAX_SEQ_LENGTH = 256
_HEADS = 12
_HEAD_DIM = DIMENSION // _HEADS
_LAYERS = 6
_LN_EPS = np.float32(1e-12)
# Rows per elementwise chunk: 64 rows x 1536 floats keeps the GELU scratch inside L2.
_CHUNK_ROWS = 64

# Rational approximation of erf for float32 (the Eigen/XLA coefficients); |error| < 5e-7 on the
# clamped range, beyond which erf is 1 in float32. The tanh form of GELU is off by ~4e-4.
_ERF_ALPHA = tuple(
    np.float32(c)
    for c in (
        -2.72614225801306e-10,
        2.77068142495902e-08,
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,
    )
)
_ERF_BETA = tuple(
    np.float32(c)
    for c in (
        -1.45660718464996e-05,
        -2.13374055278905e-04,
        -1.68282697438203e-03,
        -7.37332916720468e-03,
        -1.42647390514189e-02,
    )
)
_INV_SQRT2 = np.float32(1.0 / np.sqrt(2.0))


def _gelu_inplace(h: np.ndarray) -> None:
    """Exact (erf) GELU on a 2-D float32 array, in place, chunk by chunk."""
    rows, cols = h.shape
    u = np.empty((_CHUNK_ROWS, cols), dtype=np.float32)
    u2 = np.empty_like(u)
    p = np.empty_like(u)
    q = np.empty_like(u)
    for start in range(0, rows, _CHUNK_ROWS):
        x = h[start : start + _CHUNK_ROWS]
        n = x.shape[0]
        uu, uu2, pp, qq = u[:n], u2[:n], p[:n], q[:n]
        np.multiply(x, _INV_SQRT2, out=uu)
        np.clip(uu, -4.0, 4.0, out=uu)
        np.multiply(uu, uu, out=uu2)
        np.multiply(uu2, _ERF_ALPHA[0], out=pp)
        for coef in _ERF_ALPHA[1:-1]:
            pp += coef
            pp *= uu2
        pp += _ERF_ALPHA[-1]
        np.multiply(uu2, _ERF_BETA[0], out=qq)
        for coef in _ERF_BETA[1:-1]:
            qq += coef
            qq *= uu2
        qq += _ERF_BETA[-1]
        # erf(u) = u * P(u^2) / Q(u^2); gelu(x) = 0.5 x (1 + erf(u))
        pp *= uu
        pp /= qq
        pp += 1.0
        pp *= 0.5
        x *= pp


def _layer_norm_inplace(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> None:
    """LayerNorm over the last axis of a 2-D float32 array (biased variance, eps 1e-12), in place."""
    rows, cols = x.shape
    inv_cols = np.float32(1.0 / cols)
    for start in range(0, rows, _CHUNK_ROWS * 4):
        chunk = x[start : start + _CHUNK_ROWS * 4]
        mean = chunk.sum(axis=1, keepdims=True)
        mean *= inv_cols
        chunk -= mean
        var = np.einsum("ij,ij->i", chunk, chunk)[:, None]
        var *= inv_cols
        var += _LN_EPS
        np.sqrt(var, out=var)
        chunk /= var
        chunk *= gamma
        chunk += beta


@dataclass(frozen=True)
class _Layer:
    qkv_w: np.ndarray  # (384, 1152), query part pre-scaled by 1/sqrt(head_dim)
    qkv_b: np.ndarray
    out_w: np.ndarray  # (384, 384)
    out_b: np.ndarray
    ln1_g: np.ndarray
    ln1_b: np.ndarray
    inter_w: np.ndarray  # (384, 1536)
    inter_b: np.ndarray
    down_w: np.ndarray  # (1536, 384)
    down_b: np.ndarray
    ln2_g: np.ndarray
    ln2_b: np.ndarray


@dataclass(frozen=True)
class _Weights:
    word: np.ndarray
    position: np.ndarray
    type0: np.ndarray
    ln_g: np.ndarray
    ln_b: np.ndarray
    layers: tuple[_Layer, ...]


def _load_weights(path: Path) -> _Weights:
    from safetensors.numpy import load_file

    raw = load_file(str(path))

    def get(key: str) -> np.ndarray:
        try:
            return np.ascontiguousarray(raw[key], dtype=np.float32)
        except KeyError:
            raise EmbeddingError(f"{path} lacks tensor {key!r}: not an all-MiniLM-L6-v2 file") from None

    def transposed(key: str) -> np.ndarray:
        # Stored (out, in); keeping (in, out) contiguous lets every projection be a plain x @ W.
        return np.ascontiguousarray(get(key).T)

    scale = np.float32(1.0 / np.sqrt(_HEAD_DIM))
    layers = []
    for i in range(_LAYERS):
        p = f"encoder.layer.{i}."
        q_w = transposed(p + "attention.self.query.weight") * scale
        q_b = get(p + "attention.self.query.bias") * scale
        layers.append(
            _Layer(
                qkv_w=np.ascontiguousarray(
                    np.concatenate(
                        [
                            q_w,
                            transposed(p + "attention.self.key.weight"),
                            transposed(p + "attention.self.value.weight"),
                        ],
                        axis=1,
                    )
                ),
                qkv_b=np.concatenate([q_b, get(p + "attention.self.key.bias"), get(p + "attention.self.value.bias")]),
                out_w=transposed(p + "attention.output.dense.weight"),
                out_b=get(p + "attention.output.dense.bias"),
                ln1_g=get(p + "attention.output.LayerNorm.weight"),
                ln1_b=get(p + "attention.output.LayerNorm.bias"),
                inter_w=transposed(p + "intermediate.dense.weight"),
                inter_b=get(p + "intermediate.dense.bias"),
                down_w=transposed(p + "output.dense.weight"),
                down_b=get(p + "output.dense.bias"),
                ln2_g=get(p + "output.LayerNorm.weight"),
                ln2_b=get(p + "output.LayerNorm.bias"),
            )
        )
    return _Weights(
        word=get("embeddings.word_embeddings.weight"),
        position=get("embeddings.position_embeddings.weight"),
        type0=get("embeddings.token_type_embeddings.weight")[0],
        ln_g=get("embeddings.LayerNorm.weight"),
        ln_b=get("embeddings.LayerNorm.bias"),
        layers=tuple(layers),
    )


def _forward(w: _Weights, sequences: Sequence[Sequence[int]]) -> np.ndarray:
    """Mean-pooled, unnormalised sentence vectors for one batch of token-id sequences.

    Dense layers run on the real tokens only, packed back to back: with length-sorted batches of
    10–30-word sentences, padding was still ~25% of the rows. Only attention needs the padded
    (batch, length) layout, and gets it through a scatter into a zeroed buffer.
    """
    lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
    batch, length = len(sequences), int(lengths.max())
    ids = np.fromiter((t for s in sequences for t in s), dtype=np.int64, count=int(lengths.sum()))
    positions = np.concatenate([np.arange(n) for n in lengths])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    padded = bool((lengths != length).any())
    # Row of each real token inside the (batch * length) padded layout.
    pad_rows = (np.repeat(np.arange(batch) * length - starts, lengths) + np.arange(len(ids))) if padded else None

    x = w.word[ids]
    x += w.position[positions]
    x += w.type0
    _layer_norm_inplace(x, w.ln_g, w.ln_b)

    key_bias = None
    qkv_padded = None
    if padded:
        mask = np.arange(length)[None, :] < lengths[:, None]
        # Additive bias so padded keys get no attention weight.
        key_bias = ((mask.astype(np.float32) - 1.0) * np.float32(1e30)).reshape(batch, 1, 1, length)
        # Padded rows stay zero across layers: only real rows are ever written.
        qkv_padded = np.zeros((batch * length, 3 * DIMENSION), dtype=np.float32)
    for layer in w.layers:
        qkv = x @ layer.qkv_w
        qkv += layer.qkv_b
        if qkv_padded is not None:
            qkv_padded[pad_rows] = qkv
            qkv = qkv_padded
        heads = qkv.reshape(batch, length, 3, _HEADS, _HEAD_DIM).transpose(2, 0, 3, 1, 4)
        q, k, v = heads[0], heads[1], heads[2]
        scores = q @ k.transpose(0, 1, 3, 2)
        if key_bias is not None:
            scores += key_bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, DIMENSION)
        if pad_rows is not None:
            context = context[pad_rows]
        attn = context @ layer.out_w
        attn += layer.out_b
        attn += x
        _layer_norm_inplace(attn, layer.ln1_g, layer.ln1_b)
        x = attn

        hidden = x @ layer.inter_w
        hidden += layer.inter_b
        _gelu_inplace(hidden)
        out = hidden @ layer.down_w
        out += layer.down_b
        out += x
        _layer_norm_inplace(out, layer.ln2_g, layer.ln2_b)
        x = out

    summed = np.add.reduceat(x, starts, axis=0)
    summed /= np.maximum(lengths, 1)[:, None].astype(np.float32)
    return summed


class _BlasLimit:
    """Hold BLAS at one thread while any embed call runs, then restore it.

    threadpoolctl limits are process-wide, so overlapping calls share one limit via a counter
    instead of each restoring the setting under another's feet.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._limiter: AbstractContextManager[Any] | None = None
        self._controller: Any = None

    def __enter__(self) -> None:
        with self._lock:
            if self._active == 0:
                if self._controller is None:
                    from threadpoolctl import ThreadpoolController

                    # Scanning the loaded libraries costs ~0.4 ms; do it once, not per call.
                    self._controller = ThreadpoolController()
                self._limiter = self._controller.limit(limits=1, user_api="blas")
            self._active += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._active -= 1
            if self._active == 0 and self._limiter is not None:
                self._limiter.__exit__(None, None, None)
                self._limiter = None


_BLAS_LIMIT = _BlasLimit()


def _default_workers() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


class MiniLM:
    """sentence-transformers/all-MiniLM-L6-v2 in numpy; weights load lazily on the first embed."""

    name = MODEL_NAME
    dimension = DIMENSION

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 32,
        workers: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.batch_size = batch_size
        self.workers = workers if workers is not None else _default_workers()
        if self.workers < 1:
            raise ValueError("workers must be at least 1")
        self._model_dir = Path(model_dir) if model_dir is not None else None
        self._lock = threading.Lock()
        self._weights: _Weights | None = None
        self._tokenizer: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self.model_path: Path | None = None

    def __repr__(self) -> str:
        where = self.model_path or self._model_dir or "auto"
        return f"MiniLM(model_dir={str(where)!r}, batch_size={self.batch_size}, workers={self.workers})"

    def load(self) -> None:
        """Locate, verify and load the weights now instead of on the first embed."""
        self._ensure_loaded()

    def _ensure_loaded(self) -> tuple[_Weights, Any]:
        weights, tokenizer = self._weights, self._tokenizer
        if weights is not None:
            return weights, tokenizer
        with self._lock:
            if self._weights is None:
                from tokenizers import Tokenizer

                from .weights import find_weights

                model_dir = find_weights(self._model_dir)
                tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
                # tokenizer.json ships truncation and fixed padding at 128; sentence-transformers
                # truncates at 256 (special tokens included) and we pad per batch ourselves.
                tok.enable_truncation(max_length=MAX_SEQ_LENGTH)
                tok.no_padding()
                self._tokenizer = tok
                self.model_path = model_dir
                self._weights = _load_weights(model_dir / "model.safetensors")
            return self._weights, self._tokenizer

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="mnemic-minilm")
            return self._pool

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids per text, exactly as the model sees them ([CLS] ... [SEP], at most 256)."""
        _, tokenizer = self._ensure_loaded()
        # sentence-transformers strips inputs before tokenising.
        encodings = tokenizer.encode_batch([t.strip() for t in check_texts(texts)])
        return [e.ids for e in encodings]

    def exceeds_window(self, texts: Sequence[str]) -> list[bool]:
        """Per text, whether the model would cut it (more than 256 tokens): `embed` reads only
        the first 256, as sentence-transformers does (see `whole_texts.py` for reading it all)."""
        _, tokenizer = self._ensure_loaded()
        return [bool(e.overflowing) for e in tokenizer.encode_batch([t.strip() for t in check_texts(texts)])]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        weights, _ = self._ensure_loaded()
        token_ids = self.tokenize(items)

        order = sorted(range(len(items)), key=lambda i: len(token_ids[i]))
        # Split so every worker gets a share even when the call is a single batch.
        per_chunk = max(1, min(self.batch_size, -(-len(items) // self.workers)))
        chunks = [order[i : i + per_chunk] for i in range(0, len(order), per_chunk)]

        def run(chunk: list[int]) -> np.ndarray:
            return _forward(weights, [token_ids[i] for i in chunk])

        result = np.empty((len(items), DIMENSION), dtype=np.float32)
        with _BLAS_LIMIT:
            if len(chunks) == 1 or self.workers == 1:
                outputs = [run(c) for c in chunks]
            else:
                outputs = list(self._executor().map(run, chunks))
        for chunk, out in zip(chunks, outputs, strict=True):
            result[chunk] = out
        return as_unit_matrix(result, expected_rows=len(items), source=self.name)

    def close(self) -> None:
        """Stop the worker threads; the instance still works and restarts them when needed."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
