"""A real CrewAI kickoff whose task output holds a live-looking Stripe key and whose inputs hold a
password: the run log kept for replay holds neither (read back through `Memory.runs`, the
`mnemic kickoffs show` CLI, and every byte of the store's files), the redactions are counted in
the Memory's stats without the text being logged, and a replay sees the redacted text."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

pytest.importorskip("crewai")

from click.testing import CliRunner
from crewai import Agent, Crew, Task
from crewai_helpers import ScriptedLLM

from mnemic import Memory
from mnemic.cli.main import cli
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.safety import REDACTED
from mnemic.integrations.crewai import CrewMemory

# Built from parts so no scanner mistakes this file for a leak.
STRIPE_KEY = "sk_" + "live_" + "51HqLyjWDarjtT1zdp7dc4eC39Xy"
PASSWORD = "Tr0ub4dor&3-horse-staple"
TOKEN_AS_KEY = "ghp_" + "Zx81kQ9vLm27Tq4WaB3cD5eF6gH7iJ8kL9mN"
# What must appear nowhere: each secret whole, and a distinctive part of it.
FORBIDDEN = [STRIPE_KEY, STRIPE_KEY[8:], PASSWORD, PASSWORD[:12], TOKEN_AS_KEY, TOKEN_AS_KEY[4:]]

SETUP = "Set up the billing integration"
CHECK = "Check the billing integration"


def billing_crew(memory: CrewMemory, llm: ScriptedLLM) -> Crew:
    agent = Agent(role="Integrator", goal="Wire up billing", backstory="Careful.", llm=llm)
    return Crew(agents=[agent], name="billing", memory=memory, tasks=[
        Task(description=SETUP + " for {company}; the database password is {db_password}.",
             expected_output="The configuration.", agent=agent),
        Task(description=CHECK + ".", expected_output="A verdict.", agent=agent),
    ])


def _leaks(text: str) -> list[str]:
    return [part for part in FORBIDDEN if part in text]


def test_a_kickoff_keeps_no_secret_in_its_run_log_and_replay_sees_the_redaction(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    store_path = tmp_path / "store"
    llm = ScriptedLLM({SETUP: f"Configured Acme billing with the key {STRIPE_KEY} in the vault.",
                       CHECK: "The integration works."})
    inputs = {"user_id": "alice", "company": "Acme", "db_password": PASSWORD, TOKEN_AS_KEY: "unused"}
    with caplog.at_level(logging.DEBUG, logger="mnemic"), Memory(store_path, embedder=HashEmbedder()) as memory:
        memory.set_policy(mode="auto")
        crew = billing_crew(CrewMemory(memory), llm)
        result = crew.kickoff(inputs=inputs)
        assert STRIPE_KEY in result.tasks_output[0].raw  # the crew itself saw the real output

        run = memory.runs.get(result.kickoff_id)  # type: ignore[attr-defined]
        assert run is not None and run.user_id == "alice" and run.step_count == 2
        stored = json.dumps(run.to_dict(), ensure_ascii=False)
        assert not _leaks(stored)
        # Redacted where the secret was, and only there: the rest is kept for replay.
        assert run.inputs["db_password"] == REDACTED and run.inputs["company"] == "Acme"
        assert TOKEN_AS_KEY not in run.inputs and run.inputs[REDACTED] == "unused"
        first = run.steps[0].output
        assert first["output"]["raw"] == f"Configured Acme billing with the key {REDACTED} in the vault."
        assert f"the database password is {REDACTED}" in first["output"]["description"]
        assert first["task_key"] == crew.tasks[0].key  # ids CrewAI computed are kept as they are
        # Counted like every other redaction (the memory path refused its own copies as well).
        by_kind = memory.stats.secrets_by_kind
        assert by_kind["stripe_key"] >= 1 and by_kind["password"] >= 1 and by_kind["github_token"] >= 1

        # A replay starts from the stored outputs and inputs: it sees the redaction, not the secret.
        before = len(llm.prompts)
        replayed = crew.replay(str(crew.tasks[1].id))
        prompt = llm.prompts_for(CHECK + ".")[-1]
        assert len(llm.prompts) > before and f"with the key {REDACTED}" in prompt and not _leaks(prompt)
        again = memory.runs.get(replayed.kickoff_id)  # type: ignore[attr-defined]
        assert again is not None and not _leaks(json.dumps(again.to_dict(), ensure_ascii=False))
        kickoff_id = str(result.kickoff_id)  # type: ignore[attr-defined]

    assert "redacted" in caplog.text and not _leaks(caplog.text)  # logged by kind, never the text

    # What an operator sees, from another process's point of view.
    monkeypatch.setenv("MNEMIC_STORE", str(store_path))
    monkeypatch.setenv("MNEMIC_EMBEDDER", "hash")
    runner = CliRunner()
    for extra in ([], ["--json"]):
        shown = runner.invoke(cli, ["kickoffs", "show", kickoff_id, *extra], catch_exceptions=False)
        assert shown.exit_code == 0, shown.output
        assert REDACTED in shown.output and not _leaks(shown.output)

    # No byte of any secret in any file of the store (the embedded Chroma database, its segments,
    # mnemic's own files): nothing was ever written, so nothing is left in a log or a free page.
    files = [p for p in store_path.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        found = [part for part in FORBIDDEN if part.encode() in data]
        assert not found, f"{path.relative_to(store_path)} holds {found[0][:10]}…"
