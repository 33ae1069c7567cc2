"""FlowStatePersistence under CrewAI's @persist: whole saves, a bounded history per flow run, the
latest state back on resume, pending human feedback kept with its state, and erasure per user."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("crewai")

from crewai.flow.async_feedback.types import PendingFeedbackContext
from crewai.flow.flow import Flow, listen, start
from crewai.flow.persistence import persist
from pydantic import BaseModel

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.integrations.crewai import CrewMemory, FlowOwnerError, FlowStatePersistence


class ReviewState(BaseModel):
    id: str = ""
    user_id: str = ""
    draft: str = ""
    rounds: int = 0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        yield mem


def review_flow(persistence: FlowStatePersistence) -> type[Flow[ReviewState]]:
    @persist(persistence)
    class Review(Flow[ReviewState]):
        @start()
        def write(self) -> str:
            self.state.draft = f"Draft for {self.state.user_id}: ship on Friday."
            self.state.rounds += 1
            return self.state.draft

        @listen(write)
        def polish(self, draft: str) -> str:
            self.state.draft = draft + " (polished)"
            self.state.rounds += 1
            return self.state.draft

    return Review


def _rows(db: Path, table: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as connection:
        return connection.execute(f"SELECT flow_uuid, user_id FROM {table} ORDER BY id").fetchall()


def private_notes(persistence: FlowStatePersistence, state: type[BaseModel], user_field: str,
                  seen: list[str]) -> type[Flow[Any]]:
    """A flow that writes its user a private note, once, and records the draft each run starts from."""

    @persist(persistence)
    class Notes(Flow[state]):  # type: ignore[valid-type]
        @start()
        def write(self) -> str:
            seen.append(self.state.draft)
            self.state.draft = self.state.draft or f"{getattr(self.state, user_field)}'s private note"
            return self.state.draft

    return Notes


def test_persisted_flow_states_are_owned_bounded_and_resumable(store: Memory, tmp_path: Path) -> None:
    db = tmp_path / "flows.db"
    persistence = FlowStatePersistence(db, memory=store, keep_states=1)
    review = review_flow(persistence)
    flow = review()
    flow.kickoff(inputs={"user_id": "alice"})
    bobs = review()
    bobs.kickoff(inputs={"user_id": "bob"})

    # One row per flow run: the newest state only (keep_states=1), each owned by its run's user.
    assert sorted(_rows(db, "flow_states"), key=str) == sorted([(flow.state.id, "alice"), (bobs.state.id, "bob")],
                                                               key=str)
    latest = persistence.load_state(flow.state.id)
    assert latest is not None and latest["draft"].endswith("(polished)") and latest["rounds"] == 2

    report = store.forget(user_id="alice")
    assert report.retained["flow_states"] == 1
    assert persistence.load_state(flow.state.id) is None
    assert persistence.load_state(bobs.state.id) is not None


def test_the_owner_is_the_kickoffs_crewmemory_user_first(store: Memory, tmp_path: Path) -> None:
    db = tmp_path / "flows.db"
    persistence = FlowStatePersistence(db)  # no memory given: the flow's CrewMemory registers it

    @persist(persistence)
    class Bound(Flow[ReviewState]):
        memory = CrewMemory(store, user_id="carol")

        @start()
        def write(self) -> str:
            self.state.draft = "carol's draft"
            return self.state.draft

    flow = Bound()
    flow.kickoff()
    assert _rows(db, "flow_states") == [(flow.state.id, "carol")]
    assert store.forget(user_id="carol").retained["flow_states"] == 1


def test_pending_feedback_is_saved_with_its_state_and_cleared(store: Memory, tmp_path: Path) -> None:
    persistence = FlowStatePersistence(tmp_path / "flows.db", memory=store)
    state = ReviewState(id="run-1", user_id="dave", draft="draft one")
    context = PendingFeedbackContext(flow_id="run-1", flow_class="Review", method_name="write",
                                     method_output="draft one", message="Review this draft:")
    persistence.save_pending_feedback("run-1", context, state)

    pending = persistence.load_pending_feedback("run-1")
    assert pending is not None
    saved_state, saved_context = pending
    assert saved_state["draft"] == "draft one" and saved_context.message == "Review this draft:"
    assert persistence.load_state("run-1") == saved_state  # the state row was written in the same save
    assert store.forget(user_id="dave").retained["flow_states"] == 1  # counted per state row
    assert persistence.load_pending_feedback("run-1") is None  # the pending marker went too

    persistence.save_pending_feedback("run-2", context, ReviewState(id="run-2", user_id="erin"))
    persistence.clear_pending_feedback("run-2")
    assert persistence.load_pending_feedback("run-2") is None


def test_a_database_made_by_crewais_own_backend_gains_owners(tmp_path: Path) -> None:
    from crewai.flow.persistence.sqlite import SQLiteFlowPersistence

    db = tmp_path / "crewai_flows.db"
    SQLiteFlowPersistence(str(db)).save_state("old-run", "write", {"id": "old-run", "draft": "kept"})
    ours = FlowStatePersistence(db)
    assert ours.load_state("old-run") == {"id": "old-run", "draft": "kept"}
    ours.save_state("new-run", "write", {"id": "new-run", "user_id": "frank"})
    assert _rows(db, "flow_states") == [("old-run", None), ("new-run", "frank")]


def test_bad_state_is_refused_clearly(tmp_path: Path) -> None:
    persistence = FlowStatePersistence(tmp_path / "flows.db")
    with pytest.raises(ValueError, match="Pydantic model or a dict"):
        persistence.save_state("x", "m", ["not", "a", "state"])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        FlowStatePersistence(tmp_path / "f2.db", keep_states=0)


def test_a_flow_run_of_another_user_is_neither_loaded_nor_continued(store: Memory, tmp_path: Path) -> None:
    # CrewAI loads whatever state a kickoff's `id` names; apps pass a session id they were given.
    persistence = FlowStatePersistence(tmp_path / "flows.db", memory=store)

    @persist(persistence)
    class Notes(Flow[ReviewState]):
        memory = CrewMemory(store)

        @start()
        def write(self) -> str:
            if not self.state.draft:
                self.state.draft = f"{self.state.user_id}'s private note"
            self.state.rounds += 1
            return self.state.draft

    alices = Notes()
    alices.kickoff(inputs={"user_id": "alice"})
    with pytest.raises(FlowOwnerError, match="another user's state"):
        Notes().kickoff(inputs={"id": alices.state.id, "user_id": "bob"})
    assert _rows(tmp_path / "flows.db", "flow_states") == [(alices.state.id, "alice")]  # nothing written for bob

    again = Notes()  # alice herself continues her run
    assert again.kickoff(inputs={"id": alices.state.id, "user_id": "alice"}) == "alice's private note"
    assert again.state.rounds == 2
    bobs = Notes()
    assert bobs.kickoff(inputs={"user_id": "bob"}) == "bob's private note"



def test_a_flow_without_a_crewmemory_loads_no_other_users_run_either(store: Memory, tmp_path: Path) -> None:
    seen: list[str] = []
    Notes = private_notes(FlowStatePersistence(tmp_path / "flows.db", memory=store), ReviewState, "user_id", seen)
    alices = Notes()
    alices.kickoff(inputs={"user_id": "alice"})
    with pytest.raises(FlowOwnerError):
        Notes().kickoff(inputs={"id": alices.state.id, "user_id": "bob"})
    assert "alice's private note" not in seen  # refused before any method ran on her state


class CustomerState(BaseModel):
    id: str = ""
    customer: str = ""
    draft: str = ""


def test_a_flow_naming_its_user_under_another_key_loads_no_other_users_run(store: Memory, tmp_path: Path) -> None:
    # With user_key="customer" the kickoff's inputs name the user under that key: the loader read
    # only "user_id", found no user, and loaded whichever run the `id` named.
    seen: list[str] = []
    Notes = private_notes(FlowStatePersistence(tmp_path / "flows.db", memory=store, user_key="customer"),
                          CustomerState, "customer", seen)
    alices = Notes()
    alices.kickoff(inputs={"customer": "alice"})
    assert _rows(tmp_path / "flows.db", "flow_states") == [(alices.state.id, "alice")]
    with pytest.raises(FlowOwnerError):
        Notes().kickoff(inputs={"id": alices.state.id, "customer": "bob"})
    assert "alice's private note" not in seen


class NumberedState(BaseModel):
    id: str = ""
    user_id: int = 0
    draft: str = ""


def test_a_flow_state_whose_user_is_a_number_is_owned_and_erased_with_them(store: Memory, tmp_path: Path) -> None:
    # An app keying its users by number saved states owned by nobody: forget(user_id="42") left them.
    persistence = FlowStatePersistence(tmp_path / "flows.db", memory=store)

    @persist(persistence)
    class Notes(Flow[NumberedState]):
        @start()
        def write(self) -> str:
            self.state.draft = f"user {self.state.user_id}'s private note"
            return self.state.draft

    first, second = Notes(), Notes()
    first.kickoff(inputs={"user_id": 42})
    second.kickoff(inputs={"user_id": 7})
    assert _rows(tmp_path / "flows.db", "flow_states") == [(first.state.id, "42"), (second.state.id, "7")]
    store.forget(user_id="42")
    assert _rows(tmp_path / "flows.db", "flow_states") == [(second.state.id, "7")]


class UuidState(BaseModel):
    id: str = ""
    user_id: uuid.UUID | None = None
    draft: str = ""


def test_a_flow_keyed_by_uuid_loads_no_other_users_run_and_an_unreadable_user_id_is_refused(
        store: Memory, tmp_path: Path) -> None:
    # A UUID in the kickoff's inputs read as "no user": the load check was skipped, and bob's
    # kickoff ran a method on alice's state before its save was refused.
    persistence = FlowStatePersistence(tmp_path / "flows.db", memory=store)
    seen: list[str] = []
    Notes = private_notes(persistence, UuidState, "user_id", seen)
    alice, bob = uuid.UUID(int=1), uuid.UUID(int=2)
    alices = Notes()
    alices.kickoff(inputs={"user_id": alice})
    assert _rows(tmp_path / "flows.db", "flow_states") == [(alices.state.id, str(alice))]
    with pytest.raises(FlowOwnerError):
        Notes().kickoff(inputs={"id": alices.state.id, "user_id": bob})
    assert f"{alice}'s private note" not in seen

    class FloatState(BaseModel):
        id: str = ""
        user_id: float = 0.0

    @persist(persistence)
    class Floats(Flow[FloatState]):
        @start()
        def write(self) -> str:
            return "saved"

    with pytest.raises(RuntimeError, match="user id must be a string"):  # CrewAI wraps what a save raises
        Floats().kickoff(inputs={"user_id": 1.0})
    assert len(_rows(tmp_path / "flows.db", "flow_states")) == 1  # nothing saved unowned
