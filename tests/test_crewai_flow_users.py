"""A flow's state is one user's: a flow object, or a flow restored from a checkpoint, never starts
a run for another user from it. CrewAI keeps a flow's state from one kickoff to the next (and a
restored flow starts from the saved state), so either would hand one user's recalled memory and
notes to another's run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("crewai")

from crewai.events.event_bus import crewai_event_bus
from crewai.flow.flow import Flow, listen, start
from crewai.hooks.dispatch import HookAborted
from crewai.state.checkpoint_config import CheckpointConfig
from pydantic import BaseModel

from mnemic import Memory
from mnemic.checkpoints import catalog
from mnemic.core.embeddings import HashEmbedder
from mnemic.integrations.crewai import CrewMemory, JsonCheckpointProvider

ALICE_FACT = "My diagnosis is a torn ligament."


class ChatState(BaseModel):
    user_id: str = ""
    context: list[str] = []


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        mem.remember(ALICE_FACT, user_id="alice")
        mem.remember("My diagnosis is a sprained ankle.", user_id="bob")
        yield mem


def chat_flow(store: Memory) -> type[Flow[ChatState]]:
    class Chat(Flow[ChatState]):
        memory = CrewMemory(store)

        @start()
        def gather(self) -> None:
            self.state.context += [m.record.content for m in self.memory.recall("what is my diagnosis", limit=1)]

        @listen(gather)
        def answer(self, _: object) -> str:
            return " | ".join(self.state.context)

    return Chat


def test_a_flow_object_that_ran_for_one_user_is_refused_for_another(store: Memory) -> None:
    flow = chat_flow(store)()
    assert flow.kickoff(inputs={"user_id": "alice"}) == ALICE_FACT
    with pytest.raises(HookAborted, match="last ran for another user"):
        flow.kickoff(inputs={"user_id": "bob"})
    assert flow.kickoff(inputs={"user_id": "alice"}) == f"{ALICE_FACT} | {ALICE_FACT}"  # her state goes on
    assert chat_flow(store)().kickoff(inputs={"user_id": "bob"}) == "My diagnosis is a sprained ankle."


def test_a_flow_restored_from_a_checkpoint_runs_only_for_its_user(store: Memory, tmp_path: Path) -> None:
    chat = chat_flow(store)
    cfg = CheckpointConfig(location=str(tmp_path / "checkpoints"), provider=JsonCheckpointProvider(),
                           on_events=["method_execution_finished"])
    chat(checkpoint=cfg).kickoff(inputs={"user_id": "alice"})
    crewai_event_bus.flush()
    saved = catalog.list_checkpoints(cfg.location)
    assert saved and {c.user_id for c in saved} == {"alice"}

    restored = chat.from_checkpoint(CheckpointConfig(restore_from=saved[0].restore_from))
    with pytest.raises(HookAborted, match="restored from a checkpoint of another user"):
        restored.kickoff(inputs={"user_id": "bob"})
    crewai_event_bus.flush()
    assert {c.user_id for c in catalog.list_checkpoints(cfg.location)} == {"alice"}  # nothing saved for bob
    again = chat.from_checkpoint(CheckpointConfig(restore_from=saved[0].restore_from))
    assert ALICE_FACT in again.kickoff(inputs={"user_id": "alice"})
