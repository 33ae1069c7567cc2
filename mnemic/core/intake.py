"""Intake: caller input checked, screened for safety and turned into new records, before any write.

Every statement that becomes a record passes here: `prepare` checks the arguments of remember()
and remember_many() (bad input raises, nothing is written) and `screen` refuses secrets on every
path and sensitive categories on the paths memory chose to write (extraction, the model's remember
tool). The write pipeline only ever sees records built here, by `new_record`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from .identity import anonymous_user_id
from .policy import MemoryPolicy
from .records import (
    AUTHORS,
    COMPUTED_METADATA_KEYS,
    KINDS,
    SOURCE_KINDS,
    UNCONFIRMED_SOURCE_KINDS,
    MemoryRecord,
    record_id_for,
    text_hash,
    utcnow,
)
from .safety import SecretRefusedError, find_secrets, secret_fields, sensitive_category
from .scopes import normalise_scope
from .stats import WriteStats
from .validation import (
    MAX_SOURCE_CHARS,
    check_categories,
    check_choice,
    check_clean,
    check_created_at,
    check_flag,
    check_importance,
    check_metadata,
    check_name,
    check_new_user_id,
    check_optional_str,
    check_text,
    check_ttl,
    check_turn,
    check_user_id,
)

log = logging.getLogger("mnemic")

# Kinds that hold personal facts, to which the policy's sensitive-category exclusion applies
# (lessons and knowledge are not about a person).
PERSONAL_KINDS = frozenset({"fact", "note"})
# The policy's sensitive-category exclusion covers what memory decides to keep: facts it extracts
# (observe, memorize) and facts the model stores with its remember tool. A direct remember() by
# application code or an operator is a deliberate act and stores the statement as written;
# secrets are refused on every path.
SCREENED_SOURCE_KINDS = frozenset({"remember_tool"})
# Fields that hold ids: screened for credentials, not for merely random-looking strings.
IDENTIFIER_FIELDS = frozenset({"user_id", "session_id", "thread_id", "record_id", "note_key"})
# Fields of a record that are prose, screened by every rule; the others (user id, author, metadata
# values such as task or kickoff ids) are ids or labels, where one random-looking word is allowed.
_SCREENED_WHOLE = frozenset({"text", "scope", "topic", "source", "invalid_reason"}) | {
    f"categories[{i}]" for i in range(64)}


def free_text_fields(record: MemoryRecord) -> dict[str, str]:
    """Every string of a record that is stored, by field name (metadata values as metadata[key])."""
    fields = {"text": record.text, "user_id": record.user_id, "scope": record.scope, "author": record.author}
    optional = {"topic": record.topic, "source": record.source, "session_id": record.session_id,
                "invalid_reason": record.invalid_reason}
    fields.update({name: value for name, value in optional.items() if value is not None})
    fields.update({f"categories[{i}]": category for i, category in enumerate(record.categories)})
    fields.update({f"metadata[{key!r}]": value for key, value in record.metadata.items() if isinstance(value, str)})
    return fields


def check_record(record: MemoryRecord) -> None:
    """A record every store can keep: each stored string valid Unicode without NUL. The public
    calls check their arguments first, with errors that name them; this is the backstop for what
    other paths (a model's output, an adapter) put in a record."""
    for name, value in free_text_fields(record).items():
        check_clean(value, name=name)


def _structured(value: str) -> Any:
    """A metadata value that holds JSON (a note's data) as the structure it is, so that its keys say
    which values are ids and which are credentials; any other value as it is."""
    if value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


class Intake:
    def __init__(self, *, namespace: str, stats: WriteStats, max_text_chars: int) -> None:
        self.namespace = namespace
        self.stats = stats
        self.max_text_chars = max_text_chars
        # Anonymous callers get an id bound to this Memory object's session, never a shared one.
        self.anonymous_user_id = anonymous_user_id()

    def owner(self, user_id: Any) -> str:
        """The user a call acts for: the caller's checked id, or this session's anonymous id."""
        if user_id is None:
            return self.anonymous_user_id
        return check_user_id(user_id)

    def writer(self, user_id: Any, *, call: str) -> str:
        """The user a write acts for (`owner`), refused with SecretRefusedError when the id is a
        credential: checked before anything is journaled or queued, as remember() refuses it, so
        no path acknowledges a write whose owner would be refused later, in the background."""
        owner = self.anonymous_user_id if user_id is None else check_new_user_id(user_id)
        self.refuse_secret_fields(f"this {call}", user_id=owner)
        return owner

    def admit(self, record: MemoryRecord, before: MemoryRecord | None = None) -> None:
        """The one gate every record passes before its first write: RecordWriter calls it for each
        insert and update, whatever the path (remember, extraction, the pipeline's merges and
        retirements, update, invalidate, confirm, notes). Raises ValueError for a record that must
        not be stored; nothing has been written then.

        It is also the backstop of the secret screen: every free-text field that this write sets
        (all of them for a new record, the changed ones for an update, so that an operator can
        still retire a record stored before a rule existed) is screened, and a secret raises
        SecretRefusedError. The public calls screen their arguments earlier, with errors that
        name them; this catches whatever reaches a record another way."""
        check_record(record)
        computed = {f"metadata[{key!r}]" for key in COMPUTED_METADATA_KEYS}
        fields = {name: value for name, value in free_text_fields(record).items() if name not in computed}
        if before is not None:
            previous = free_text_fields(before)
            fields = {name: value for name, value in fields.items() if previous.get(name) != value}
        if fields:
            self.refuse_secret_fields(
                "this write", **{name: _structured(value) for name, value in fields.items()},
                identifiers=frozenset(name for name in fields if name not in _SCREENED_WHOLE))

    @staticmethod
    def actor(actor: Any, author: str) -> str:
        """Who a write is recorded as made by: the caller's `actor`, or the statement's author."""
        return check_name(actor, name="actor") if actor is not None else author

    def prepare(
        self,
        texts: Sequence[Any],
        *,
        policy: MemoryPolicy,
        user_id: Any,
        scope: Any = None,
        categories: Any = None,
        importance: Any = None,
        author: Any = "user",
        source_kind: Any = "conversation",
        session_id: Any = None,
        turn: Any = None,
        private: Any = False,
        source: Any = None,
        metadata: Any = None,
        ttl_seconds: Any = None,
        kind: Any = "fact",
        created_at: Any = None,
        topic: str | None = None,
        actor: Any = None,
        call: str = "remember()",
    ) -> list[MemoryRecord]:
        """Checked, screened records for `texts`; refused texts (secrets, excluded categories) are
        left out and counted in `stats`. A secret in any other field (user id, metadata keys or
        values, source, session id, categories, scope, actor) raises SecretRefusedError: those are set by
        application code, and the error names the field to fix."""
        owner = self.writer(user_id, call=call)
        clean_texts = [check_text(t, max_chars=self.max_text_chars) for t in texts]
        scope_path = normalise_scope(scope)
        cats = check_categories(categories)
        weight = check_importance(importance)
        check_choice(author, name="author", choices=AUTHORS)
        check_choice(source_kind, name="source_kind", choices=SOURCE_KINDS)
        check_choice(kind, name="kind", choices=KINDS)
        session = check_optional_str(session_id, name="session_id")
        turn_no = check_turn(turn)
        check_flag(private, name="private")
        origin = check_optional_str(source, name="source", max_chars=MAX_SOURCE_CHARS)
        extra = check_metadata(metadata)
        made_at = check_created_at(created_at)
        # The scope as given: normalising drops the empty segment of a "scheme://" URL in it.
        self.refuse_secret_fields(
            f"this {call}", scope=scope if isinstance(scope, str) else scope_path, categories=cats,
            session_id=session, source=origin, metadata=extra, actor=actor)
        # An explicit ttl (0 = never) wins; otherwise the policy's applies.
        ttl = check_ttl(ttl_seconds) if ttl_seconds is not None else (policy.ttl_seconds or None)
        now = utcnow()
        return [
            self.new_record(t, owner=owner, scope=scope_path, categories=cats, importance=weight,
                            author=author, source_kind=source_kind, session=session, turn=turn_no,
                            private=private, source=origin, metadata=extra, ttl=ttl, kind=kind,
                            created_at=made_at, topic=topic, now=now)
            for t in clean_texts
            if self.screen(t, kind=kind, policy=policy, screen_sensitive=source_kind in SCREENED_SOURCE_KINDS)
        ]

    def new_record(self, text: str, *, owner: str, scope: str, categories: list[str],
                   importance: float, author: str, source_kind: str, session: str | None,
                   turn: int | None, private: bool, source: str | None, metadata: dict[str, Any],
                   ttl: float | None, kind: str, created_at: datetime | None, topic: str | None,
                   now: datetime) -> MemoryRecord:
        state = "pending" if source_kind in UNCONFIRMED_SOURCE_KINDS else "valid"
        digest = text_hash(text)
        return MemoryRecord(
            id=record_id_for(self.namespace, owner, kind, digest, scope=scope, state=state, private=private,
                             source=source),
            text=text, hash=digest, kind=kind, user_id=owner,
            namespace=self.namespace, scope=scope, categories=categories, topic=topic,
            importance=importance, author=author, source_kind=source_kind,
            session_id=session, turn=turn, state=state, created_at=created_at or now, updated_at=now,
            expires_at=now + timedelta(seconds=ttl) if ttl else None, private=private, source=source,
            metadata=metadata,
        )

    def refuse_secret_fields(self, what: str, /, identifiers: frozenset[str] = IDENTIFIER_FIELDS,
                             **fields: Any) -> None:
        """Raise SecretRefusedError (counted in `stats`, logged by field name only) when any of
        `fields` holds a secret; checked before anything is written. Fields named in `identifiers`
        may be one random-looking word (an id) without being refused."""
        found = secret_fields(fields, identifiers=identifiers)
        if found:
            self.stats.add_secrets([kind for kinds in found.values() for kind in kinds])
            log.info("refused %s: a secret in %s", what, ", ".join(sorted(found)))
            raise SecretRefusedError(found, what=what)

    def screen(self, text: str, *, kind: str, policy: MemoryPolicy, screen_sensitive: bool) -> bool:
        """False (and counted) for a secret, whatever the policy or the path; for a sensitive
        category when the policy excludes them and the write is one memory chose to make
        (`screen_sensitive`). The text itself is never logged."""
        hits = find_secrets(text)
        if hits:
            kinds = [h.kind for h in hits]
            self.stats.add_secrets(kinds)
            log.info("refused to store a statement holding a secret (%s)", ", ".join(sorted(set(kinds))))
            return False
        if screen_sensitive and policy.exclude_sensitive and kind in PERSONAL_KINDS:
            category = sensitive_category(text)
            if category is not None:
                self.stats.add_sensitive(category)
                log.info("refused to store a statement in an excluded category (%s)", category)
                return False
        return True
