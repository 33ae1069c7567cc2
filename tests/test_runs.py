"""The run log (kickoff outputs kept for replay): per group and per run, bounded, erasable per user,
shared by every process that opens the store or the server."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_server_mode import _client
from test_server_mode import chroma_server as chroma_server  # the server fixture

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.runs import RunStep
from mnemic.core.safety import REDACTED

ROOT = Path(__file__).resolve().parents[1]


def _kickoff(memory: Memory, group: str, user: str, outputs: list[str], name: str | None = None) -> str:
    run = memory.runs.begin(group=group, group_name=name or group, user_id=user, inputs={"user_id": user})
    for index, text in enumerate(outputs):
        memory.runs.record_step(run.run_id, index, {"task_id": f"{run.run_id}-t{index}", "raw": text},
                                step_id=f"{run.run_id}-t{index}")
    return run.run_id


def test_a_kickoff_of_one_crew_never_overwrites_another_crews(memory: Memory) -> None:
    first = _kickoff(memory, "crew-a", "alice", ["a1", "a2"])
    second = _kickoff(memory, "crew-b", "bob", ["b1"])
    third = _kickoff(memory, "crew-a", "carol", ["a1'", "a2'"])

    kept = memory.runs.get(first)
    assert kept is not None and [s.output["raw"] for s in kept.steps] == ["a1", "a2"]
    assert kept.user_id == "alice" and kept.inputs == {"user_id": "alice"} and kept.step_count == 2
    assert memory.runs.latest("crew-a").run_id == third  # type: ignore[union-attr]
    assert memory.runs.latest("crew-a", user_id="alice").run_id == first  # type: ignore[union-attr]
    assert memory.runs.latest("crew-b").run_id == second  # type: ignore[union-attr]
    assert memory.runs.latest("crew-a", step_id=f"{first}-t1").run_id == first  # type: ignore[union-attr]
    assert [r.run_id for r in memory.runs.runs(group="crew-a")] == [third, first]  # newest first
    assert [r.run_id for r in memory.runs.holding_step(f"{second}-t0")] == [second]


def test_a_step_recorded_again_replaces_the_earlier_output_and_a_run_keeps_what_it_was_given(memory: Memory) -> None:
    run = memory.runs.begin(group="g", user_id="alice", steps=[RunStep(index=0, output={"raw": "reused"})])
    memory.runs.record_step(run.run_id, 1, {"raw": "first try"})
    memory.runs.record_step(run.run_id, 1, {"raw": "second try"})
    stored = memory.runs.get(run.run_id)
    assert stored is not None and [s.output["raw"] for s in stored.steps] == ["reused", "second try"]
    with pytest.raises(ValueError, match="already exists"):
        memory.runs.begin(group="g", user_id="alice", run_id=run.run_id)


STRIPE_KEY = "sk_" + "live_" + "51HqLyjWDarjtT1zdp7dc4eC39Xy"
PASSWORD = "Tr0ub4dor&3-horse-staple"
GITHUB_TOKEN = "ghp_" + "Zx81kQ9vLm27Tq4WaB3cD5eF6gH7iJ8kL9mN"


def test_a_run_holds_no_secret_in_inputs_keys_meta_or_steps_and_each_is_counted(
        memory: Memory, caplog: pytest.LogCaptureFixture) -> None:
    task_key = "393cd97b71706eb04f6be226f068f75e"  # a hash CrewAI computes; "task_key: <hex>" reads as a key
    with caplog.at_level("DEBUG", logger="mnemic"):
        run = memory.runs.begin(group="g", group_name="billing", user_id="alice", meta={"note": f"key {STRIPE_KEY}"},
                                inputs={"user_id": "alice", "db_password": PASSWORD, GITHUB_TOKEN: "as a key",
                                        "door_pin": 7731, "company": "Acme"})
        said = f"The password is {PASSWORD}"
        memory.runs.record_step(run.run_id, 0, {
            "task_key": task_key, "agent": "Integrator",
            "output": {"raw": f"Use {STRIPE_KEY} for billing.", "messages": [{"role": "user", "content": said}]},
        }, step_id="t0", verbatim=("task_key",))
    assert memory.stats.secrets_by_kind == {"stripe_key": 2, "password": 3, "github_token": 1}
    assert memory.stats.secrets_refused == 6
    assert "redacted" in caplog.text and STRIPE_KEY not in caplog.text and PASSWORD not in caplog.text

    stored = memory.runs.get(run.run_id)
    assert stored is not None
    assert stored.inputs == {"user_id": "alice", "db_password": REDACTED, REDACTED: "as a key", "door_pin": REDACTED,
                             "company": "Acme"}
    assert stored.meta == {"note": f"key {REDACTED}"}
    step = stored.steps[0].output
    assert step["task_key"] == task_key and step["agent"] == "Integrator"
    assert step["output"] == {"raw": f"Use {REDACTED} for billing.",
                              "messages": [{"role": "user", "content": f"The password is {REDACTED}"}]}

    # A replay copies stored steps into a new run: they hold nothing more to redact or count.
    copy = memory.runs.begin(group="g", user_id="alice", inputs=stored.inputs, steps=stored.steps,
                             verbatim=("task_key",))
    assert memory.stats.secrets_refused == 6
    again = memory.runs.get(copy.run_id)
    assert again is not None and again.steps[0].output == step and again.inputs == stored.inputs


def test_prune_keeps_the_newest_runs_of_one_group_only(memory: Memory) -> None:
    old = [_kickoff(memory, "crew-a", "alice", ["x"]) for _ in range(4)]
    other = _kickoff(memory, "crew-b", "alice", ["y"])
    assert memory.runs.prune("crew-a", 2) == 2
    assert [r.run_id for r in memory.runs.runs(group="crew-a")] == [old[3], old[2]]
    assert memory.runs.get(old[0]) is None  # its steps went with it
    assert memory.runs.get(other) is not None


def test_forget_erases_the_users_runs_in_any_process_and_says_how_many(store_path: Path) -> None:
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        assert "kickoffs" not in memory.forget(user_id="nobody").retained  # nothing ever recorded
        alice = [_kickoff(memory, "crew-a", "alice", ["secret plan"]) for _ in range(2)]
        bob = _kickoff(memory, "crew-a", "bob", ["bob's plan"])
        memory.reset()  # emptying memory does not drop kickoff records: they are not memory
        assert memory.runs.get(alice[0]) is not None
    code = (
        "from mnemic import Memory; from mnemic.core.embeddings import HashEmbedder\n"
        f"m = Memory({str(store_path)!r}, embedder=HashEmbedder())\n"
        "r = m.forget(user_id='alice'); print(r.retained['kickoffs']); m.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == "2"
    with Memory(store_path, embedder=HashEmbedder()) as memory:
        assert all(memory.runs.get(r) is None for r in alice)
        assert memory.runs.runs(user_id="alice") == []
        assert memory.runs.get(bob) is not None


def test_bad_input_is_named(memory: Memory) -> None:
    with pytest.raises(KeyError, match="begin"):
        memory.runs.record_step("0123abc", 0, {"raw": "x"})
    with pytest.raises(ValueError, match="not a run id"):
        memory.runs.get("../etc")
    with pytest.raises(ValueError, match="group"):
        memory.runs.begin(group=" ", user_id="alice")
    with pytest.raises(ValueError, match="step index"):
        run = memory.runs.begin(group="g", user_id="alice")
        memory.runs.record_step(run.run_id, -1, {})
    with pytest.raises(ValueError, match="keep"):
        memory.runs.prune("g", -1)


@pytest.mark.server
def test_a_kickoff_recorded_by_one_server_process_is_read_and_erased_by_another(chroma_server: int) -> None:
    server_port = chroma_server
    code = textwrap.dedent(f"""
        import chromadb
        from chromadb.config import Settings
        from mnemic import Memory
        from mnemic.core.embeddings import HashEmbedder
        settings = Settings(anonymized_telemetry=False)
        client = chromadb.HttpClient(host="127.0.0.1", port={server_port}, settings=settings)
        with Memory(client=client, namespace="runs-shared", embedder=HashEmbedder()) as m:
            run = m.runs.begin(group="crew-a", user_id="alice", inputs={{"q": 1}})
            m.runs.record_step(run.run_id, 0, {{"raw": "done in a worker"}}, step_id="t0")
            print(run.run_id)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    run_id = out.stdout.strip().splitlines()[-1]
    with Memory(client=_client(server_port), namespace="runs-shared", embedder=HashEmbedder()) as memory:
        seen = memory.runs.get(run_id)
        assert seen is not None and seen.steps[0].output["raw"] == "done in a worker"
        assert memory.forget(user_id="alice").retained["kickoffs"] == 1
        assert memory.runs.get(run_id) is None
