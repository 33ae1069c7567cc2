"""A credential in structured data is never stored when what names it is not its own key.

Found by an attack, each stored before: a Kubernetes-style entry `{"name": "DB_PASSWORD", "value": X}`
(the sibling says what the value is), a value under an ancestor key naming a secret
(`{"secret": {"value": X}}`), and the same entry flattened from a JSON knowledge file
("env[1].name: DB_PASSWORD" / "env[1].value: X") or written out as YAML or JSON text (alone or
inside a message). The screen now
reads a value under the name its entry holds and under its nearest ancestor naming a credential;
entries and ancestors that name no credential, or a key between that says what the value describes
(`{"secrets": {"region": ...}}`), stay storable.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from secret_corpus import store_bytes

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.notes import NoteRefusedError
from mnemic.core.safety import REDACTED, find_secrets

# (shape, value, the secret in it)
NAMED_BY_STRUCTURE: list[tuple[str, dict[str, Any], str]] = [
    ("kubernetes env entry", {"env": [{"name": "DB_HOST", "value": "db.internal"},
                                      {"name": "DB_PASSWORD", "value": "Zx9!kube-db-pass"}]}, "Zx9!kube-db-pass"),
    ("value under a secret key", {"secret": {"value": "Qw3rty!vault77"}}, "Qw3rty!vault77"),
    ("deep under a credentials key", {"credentials": {"prod": {"db": {"value": "Lm4#deep-cred-9"}}}},
     "Lm4#deep-cred-9"),
    ("list under a secrets key", {"secrets": [{"name": "db", "value": "Rt5$listed-77"}]}, "Rt5$listed-77"),
    ("aws tags, value first", {"Tags": [{"Key": "Name", "Value": "web-1"},
                                        {"Value": "Vk8&tagged-pw-3", "Key": "db_password"}]}, "Vk8&tagged-pw-3"),
    ("cloudformation parameter", {"Parameters": [{"ParameterKey": "MasterUserPassword",
                                                  "ParameterValue": "Cf2!stack-pw-8"}]}, "Cf2!stack-pw-8"),
    ("ssm parameter path", {"Name": "/prod/db/password", "Value": "Ss3!param-pw-1", "Type": "SecureString"},
     "Ss3!param-pw-1"),
    ("har header", {"headers": [{"name": "X-Api-Key", "value": "k7Hq2LmN9pR4sT6v"}]}, "k7Hq2LmN9pR4sT6v"),
    # Found by a later attack, each stored: the value half keyed "data", "content" (not "value"),
    # whichever half comes first, a named phrase, a wifi pre-shared key.
    ("entry, value keyed data", {"name": "DB_PASSWORD", "data": "Dt4!data-pw-5"}, "Dt4!data-pw-5"),
    ("field entry, value first", {"data": "Fd6!field-pw-2", "field": "password"}, "Fd6!field-pw-2"),
    ("labelled phrase, value keyed content", {"label": "API key", "content": "Lc7!content-k-4"}, "Lc7!content-k-4"),
    ("wifi pre-shared key", {"wifi": {"ssid": "HomeNet", "psk": "Ps8!wifi-psk-6"}}, "Ps8!wifi-psk-6"),
    # A card split by commas, or given as its printed groups, one list item each.
    ("card with commas", {"card": "4539,1488,0343,6467"}, "4539,1488,0343,6467"),
    ("card groups as list items", {"card_groups": ["4539", "1488", "0343", "6467"]},
     '4539", "1488", "0343", "6467'),
    ("unnamed groups as list items", {"ids": ["5105", "1051", "0510", "5100"]}, '5105", "1051", "0510", "5100'),
]
K8S_YAML = """env:
  - name: DB_HOST
    value: db.internal
  - name: DB_PASSWORD
    value: Zx9!kube-db-pass
"""

# Structured data that names no credential where it holds a value: must stay storable.
ORDINARY: list[dict[str, Any]] = [
    {"env": [{"name": "DB_HOST", "value": "db.internal"}, {"name": "DB_USER", "value": "admin"},
             {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db-secret", "key": "password"}}}]},
    {"secrets": {"region": "us-east-1", "host": "10.0.0.5", "owner": "platform-team"}},
    {"Tags": [{"Key": "Name", "Value": "web-1"}, {"Key": "Environment", "Value": "prod2024"}]},
    {"auth": {"provider": "google"}, "password_policy": {"min_length": 12}},
    {"token_usage": {"prompt": 1234, "completion": 456}},
    {"fields": [{"label": "Password reset guide", "value": "Click Forgot password on the login page"}]},
    {"field": "password", "data": {"min_length": 12}, "content": "At least 12 characters"},
    {"name": "token_count", "data": 1234},
    {"wifi": {"ssid": "HomeNet", "security": "WPA2-PSK"}},
    {"amounts": ["1,234,567", "2,345,678", "13,456,789,012"], "coords": [40.712776, -74.005974]},
    {"years": ["2019", "2020", "2021", "2022"], "zips": ["78701", "78702", "94103"]},
    {"ratings": [4, 5, 3, 5, 4, 4, 5, 3, 5, 4, 5, 4, 3, 5, 4, 4], "stars": "4 / 5"},
    {"versions": ["3.11.7", "3.12.1", "2.7.18"], "phones": ["512-555-0199", "737-555-0188"]},
]
ORDINARY_YAML = """env:
  - name: DB_USER
    value: admin
  - name: DB_PASSWORD
    valueFrom:
      secretKeyRef:
        name: db-secret
        key: password
"""


@pytest.fixture
def mem(tmp_path: Path) -> Any:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        yield memory


def test_the_langgraph_store_refuses_a_value_its_entry_or_an_ancestor_names(mem: Memory, tmp_path: Path) -> None:
    pytest.importorskip("langgraph")
    from mnemic.integrations.langgraph import MnemicStore

    store = MnemicStore(mem)
    for i, (shape, value, _) in enumerate(NAMED_BY_STRUCTURE):
        with contextlib.suppress(Exception):  # how a refused put answers is the store's to decide
            store.put(("memories", "alice"), f"item{i}", value)
        assert store.get(("memories", "alice"), f"item{i}") is None, shape
    for i, value in enumerate(ORDINARY):
        store.put(("memories", "bob"), f"ok{i}", value)
        assert store.get(("memories", "bob"), f"ok{i}") is not None, value
    stored = store_bytes(tmp_path)
    assert not [shape for shape, _, secret in NAMED_BY_STRUCTURE if secret.encode() in stored]


def test_notes_refuse_a_value_its_entry_or_an_ancestor_names(mem: Memory) -> None:
    for i, (_, value, _) in enumerate(NAMED_BY_STRUCTURE):
        with pytest.raises(NoteRefusedError):
            mem.notes.put(f"k{i}", "deployment config", user_id="alice", data=value)
    for i, value in enumerate(ORDINARY):
        mem.notes.put(f"ok{i}", "deployment config", user_id="alice", data=value)
    assert len(mem.notes.scan(user_id="alice")) == len(ORDINARY)


def test_the_run_log_redacts_the_value_and_keeps_the_rest(mem: Memory) -> None:
    inputs = {f"input_{i}": value for i, (_, value, _) in enumerate(NAMED_BY_STRUCTURE)}
    run = mem.runs.begin(group="crew", user_id="alice", inputs=inputs)
    kept = mem.runs.get(run.run_id)
    assert kept is not None
    text = json.dumps(kept.inputs, ensure_ascii=False)
    assert not [shape for shape, _, secret in NAMED_BY_STRUCTURE if secret in text]
    env = kept.inputs["input_0"]["env"]
    assert env == [{"name": "DB_HOST", "value": "db.internal"}, {"name": "DB_PASSWORD", "value": REDACTED}]
    plain = mem.runs.begin(group="crew", user_id="alice", inputs={f"input_{i}": v for i, v in enumerate(ORDINARY)})
    again = mem.runs.get(plain.run_id)
    assert again is not None and again.inputs == {f"input_{i}": v for i, v in enumerate(ORDINARY)}


def test_a_json_knowledge_file_skips_the_entry_holding_a_password(mem: Memory, tmp_path: Path) -> None:
    doc = tmp_path / "deploy.json"
    doc.write_text(json.dumps({"service": "billing", **NAMED_BY_STRUCTURE[0][1]}))
    result = mem.knowledge.add_file(doc)
    assert [chunk.section for chunk in result.refused] == ["env[1]"]
    texts = [chunk.text for chunk in mem.knowledge.list(limit=100)]
    assert any("db.internal" in text for text in texts)  # the entry naming no credential went in
    assert not any("Zx9!kube-db-pass" in text for text in texts)
    assert b"Zx9!kube-db-pass" not in store_bytes(tmp_path / "m")
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(ORDINARY[0]))
    assert mem.knowledge.add_file(plain).refused == []


AS_TEXT = [K8S_YAML, "env[1].name: DB_PASSWORD\nenv[1].value: Zx9!kube-db-pass",
           *(json.dumps(value) for _, value, _ in NAMED_BY_STRUCTURE),
           f"Here is the config, keep it: {json.dumps(NAMED_BY_STRUCTURE[1][1], indent=2)} thanks"]


@pytest.mark.parametrize("text", AS_TEXT)
def test_an_entry_written_as_text_is_refused(mem: Memory, text: str) -> None:
    assert mem.remember(text, user_id="alice") is None
    hits = [text[h.start:h.end] for h in find_secrets(text)]
    assert any(secret in hits for _, _, secret in NAMED_BY_STRUCTURE), hits
    assert "db.internal" not in hits and "web-1" not in hits  # the sibling entries are no secrets


@pytest.mark.parametrize("text", [ORDINARY_YAML, *(json.dumps(value) for value in ORDINARY),
                                  f"The config is {json.dumps(ORDINARY[1])}, see the runbook."])
def test_an_entry_naming_no_credential_written_as_text_is_kept(mem: Memory, text: str) -> None:
    assert find_secrets(text) == [], [text[h.start:h.end] for h in find_secrets(text)]
    assert mem.remember(text, user_id="alice") is not None
