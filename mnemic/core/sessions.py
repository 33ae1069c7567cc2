"""What `observe()` keeps about a session under the `explicit` policy until `memorize()` commits it.

Process memory only, touched only by the background writer: the turns seen (so memorize() can
commit them later) and the messages of turns that opted out (so no later memorize() stores them).
"""

from __future__ import annotations

import hashlib
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from .extraction import Message

MAX_BUFFERED_TURNS = 200
MAX_EXCLUDED_MESSAGES = 5000
MAX_MEMORIZE_CHARS = 12_000


@dataclass(frozen=True)
class Turn:
    turn: int | None
    scope: str
    messages: list[Message]
    metadata: dict[str, Any] | None = None
    task: str | None = None  # a finished agent task's instruction (see Memory.observe)
    agent_llm: Any = None
    # When observe() took the turn (time.time()): an erasure of the user after it drops the turn.
    accepted_at: float = field(default_factory=time.time)


def message_key(message: Message) -> str:
    return hashlib.sha256(f"{message.role}\x00{' '.join(message.content.split())}".encode()).hexdigest()[:24]


class SessionBuffer:
    """One session's buffered turns and opted-out messages."""

    def __init__(self) -> None:
        self.turns: deque[Turn] = deque(maxlen=MAX_BUFFERED_TURNS)
        self._excluded: dict[str, None] = {}

    def add(self, turn: Turn) -> None:
        self.turns.append(turn)

    def exclude(self, messages: list[Message]) -> None:
        for message in messages:
            self._excluded[message_key(message)] = None
        while len(self._excluded) > MAX_EXCLUDED_MESSAGES:
            del self._excluded[next(iter(self._excluded))]

    def excluded_message(self, message: Message) -> bool:
        return message_key(message) in self._excluded

    def uncommitted(self) -> list[Turn]:
        found = []
        for turn in self.turns:
            kept = [m for m in turn.messages if not self.excluded_message(m)]
            if kept:
                found.append(replace(turn, messages=kept))
        return found

    def commit_all(self) -> None:
        # memorize() runs on the writer thread, the only one that adds turns: everything buffered
        # was handed to it, so all of it is committed.
        self.turns.clear()


def group_turns(turns: list[Turn]) -> list[list[Turn]]:
    """Consecutive conversation turns of one scope, up to MAX_MEMORIZE_CHARS per group (one
    extraction each). A task turn is a group of its own: its instruction belongs to it alone."""
    groups: list[list[Turn]] = []
    size = 0
    for turn in turns:
        length = sum(len(m.content) for m in turn.messages)
        if groups and groups[-1][0].scope == turn.scope and groups[-1][0].metadata == turn.metadata \
                and turn.task is None and groups[-1][0].task is None and size + length <= MAX_MEMORIZE_CHARS:
            groups[-1].append(turn)
            size += length
        else:
            groups.append([turn])
            size = length
    return groups
