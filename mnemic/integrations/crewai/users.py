"""Whose memory a CrewMemory serves: the user of the call being made.

CrewAI passes a memory no user, so the user is explicit. It is bound when the CrewMemory is made
(`CrewMemory(memory, user_id="alice")`), given per kickoff in the inputs
(`crew.kickoff(inputs={"user_id": "alice"})`, `flow.kickoff(inputs=...)`), held in a running
flow's state (`state.user_id`, or `state["user_id"]`) or set around a block of code
(`with crew_memory.for_user("alice"): ...`). `for_user()` wins over the innermost kickoff's inputs
(then its flow state, then the kickoffs around it), which win over the bound user. Each run reads
its own kickoff's inputs, so concurrent runs and `kickoff_for_each` copies never share a user.

With no user, a crew or flow kickoff is refused with an error that says how to give one, and
direct calls raise `UnknownUserError`: memory is never served from, or written into, a store
shared between users. (A session-bound anonymous id was the alternative; refusing is safer here,
because CrewAI swallows memory errors and one crew object typically serves many users, so an
anonymous kickoff would quietly start a memory nobody can reach again.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ...core.validation import check_user_id
from . import context

NO_USER = (
    "mnemic CrewMemory does not know which user this run is for, and it never shares memory between "
    "users. Give the user in the kickoff inputs (crew.kickoff(inputs={{'{key}': 'alice'}}), or "
    "flow.kickoff(inputs={{'{key}': 'alice'}}) / a '{key}' field in the flow's state), bind it "
    "when the memory is made (CrewMemory(memory, user_id='alice')) or wrap the call in "
    "`with crew_memory.for_user('alice'):`."
)


class UnknownUserError(RuntimeError):
    """A memory call with no user: none bound, none in the kickoff inputs, none set by for_user()."""


def _from_state(state: Any, key: str) -> Any:
    """The user a flow's state holds under `key` (a dict state or a model state), or None. A blank
    value is a field not filled in yet (a state model's default), not a user."""
    value = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
    return None if isinstance(value, str) and not value.strip() else value


class UserBinding:
    """The user of one CrewMemory's calls: `for_user()`, else the innermost kickoff whose inputs
    name one under `key`, else the user bound at construction."""

    def __init__(self, bound: str | None, key: str, name: str) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError("user_key must name the kickoff input that holds the user id, e.g. 'user_id'")
        self.bound = check_user_id(bound) if bound is not None else None
        self.key = key
        self._explicit: ContextVar[str | None] = ContextVar(name, default=None)

    def explicit(self) -> str | None:
        """The user a `for_user()` block names, if the caller is inside one."""
        return self._explicit.get()

    def current(self) -> str | None:
        explicit = self._explicit.get()
        if explicit is not None:
            return explicit
        for kick in reversed(context.kickoffs()):
            value = kick.inputs.get(self.key)
            if value is None and not kick.is_crew:
                value = _from_state(getattr(kick.owner, "state", None), self.key)
            if value is not None:
                return check_user_id(value)
        return self.bound

    def missing_message(self) -> str:
        return NO_USER.format(key=self.key)

    def require(self) -> str:
        user = self.current()
        if user is None:
            raise UnknownUserError(self.missing_message())
        return user

    @contextmanager
    def for_user(self, user_id: str) -> Iterator[None]:
        token = self._explicit.set(check_user_id(user_id))
        try:
            yield
        finally:
            self._explicit.reset(token)


__all__ = ["NO_USER", "UnknownUserError", "UserBinding"]
