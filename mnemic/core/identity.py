"""Owner ids mnemic makes itself, kept apart from the user ids callers give.

Some records belong to an owner that is not a user: the items of a LangGraph store namespace that
names no user, or what an anonymous session wrote. Those owners get ids under reserved prefixes,
and a caller can never pass such an id as a user id (check_user_id refuses it with a clear error),
so no caller can read them by naming them (through recall, profile, list, the tools or the store).

mnemic's own code passes them as `InternalUserId`, a `str` that only the factories below make;
any plain string under a reserved prefix, whether it comes from a config, a tool call, a request or
a model, is refused. `Memory.users()` hands them back in that form, so an operator can still list
and erase them.
"""

from __future__ import annotations

import uuid

from .store import owner_key

ANONYMOUS_PREFIX = "anonymous:"
# Owners of LangGraph store namespaces too short to name a user. The form predates this module:
# keeping it keeps items stored before reachable.
NAMESPACE_OWNER_PREFIX = "langgraph-ns:"
ERASED_PREFIX = "erased:"
# (The knowledge store's owner in the lexical index needs no prefix: it starts with a space, which
# no checked user id does.)
RESERVED_PREFIXES: tuple[str, ...] = (ANONYMOUS_PREFIX, NAMESPACE_OWNER_PREFIX, ERASED_PREFIX)


class InternalUserId(str):
    """An owner id mnemic made itself (see the module docstring). Make one with the factories."""

    __slots__ = ()


def reserved_prefix(user_id: str) -> str | None:
    """The reserved prefix `user_id` starts with (case and surrounding space ignored), or None."""
    folded = user_id.strip().casefold()
    return next((p for p in RESERVED_PREFIXES if folded.startswith(p)), None)


def anonymous_user_id() -> InternalUserId:
    """A fresh owner for one anonymous session: bound to it, shared with nobody."""
    return InternalUserId(ANONYMOUS_PREFIX + uuid.uuid4().hex)


def namespace_owner_id(name: str) -> InternalUserId:
    """The owner of a store namespace that names no user, derived from the namespace's name."""
    return InternalUserId(NAMESPACE_OWNER_PREFIX + name)


def erased_owner_id(user_id: str) -> str:
    """What an erasure tombstone says of the erased owner: that it was one, not who."""
    return ERASED_PREFIX + owner_key(user_id)[:16]


def user_key(user_id: str) -> str:
    """How a log line or a failure message names a user: by the start of its owner key (the hash
    its collection is named by, so nothing the store's files do not already show), never by the id,
    which is whatever the caller passed and may be a credential or a person's name."""
    return owner_key(user_id)[:12]


def user_label(user_id: str) -> str:
    """One user as a log line names it (see `user_key`)."""
    return f"a user (key {user_key(user_id)})"


def recognise(user_id: str) -> str:
    """An owner id read back from the store: an internal one is handed back as InternalUserId."""
    return InternalUserId(user_id) if reserved_prefix(user_id) is not None else user_id
