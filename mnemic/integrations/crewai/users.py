"""Whose memory a CrewMemory serves: the user of the call being made.

CrewAI passes a memory no user, so the user is explicit. It is bound when the CrewMemory is made
(`CrewMemory(memory, user_id="alice")`), given per kickoff in the inputs
(`crew.kickoff(inputs={"user_id": "alice"})`) or set around a block of code
(`with crew_memory.for_user("alice"): ...`). `for_user()` wins over the kickoff inputs, which win
over the bound user. With no user, a crew kickoff is refused with an error that says how to give
one, and direct calls raise `UnknownUserError`: memory is never served from, or written into, a
store shared between users. (A session-bound anonymous id was the alternative; refusing is safer
here, because CrewAI swallows memory errors and one crew object typically serves many users, so
an anonymous kickoff would quietly start a memory nobody can reach again.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ...core.validation import check_user_id
from . import context

NO_USER = (
    "mnemic CrewMemory does not know which user this run is for, and it never shares memory between "
    "users. Give the user in the kickoff inputs (crew.kickoff(inputs={{'{key}': 'alice'}})), bind it "
    "when the memory is made (CrewMemory(memory, user_id='alice')) or wrap the call in "
    "`with crew_memory.for_user('alice'):`."
)


class UnknownUserError(RuntimeError):
    """A memory call with no user: none bound, none in the kickoff inputs, none set by for_user()."""


class UserBinding:
    """The user of one CrewMemory's calls: `for_user()`, else the innermost kickoff whose inputs
    name one under `key`, else the user bound at construction."""

    def __init__(self, bound: str | None, key: str, name: str) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError("user_key must name the kickoff input that holds the user id, e.g. 'user_id'")
        self.bound = check_user_id(bound) if bound is not None else None
        self.key = key
        self._explicit: ContextVar[str | None] = ContextVar(name, default=None)

    def current(self) -> str | None:
        explicit = self._explicit.get()
        if explicit is not None:
            return explicit
        for kick in reversed(context.kickoffs()):
            value = kick.inputs.get(self.key)
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
