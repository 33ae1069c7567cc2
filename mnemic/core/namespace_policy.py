"""The memory policy of one namespace as stored in its settings: read it, replace it, enforce it.

Read from the store on every call, so a change made by another process (an operator's CLI, a
second server worker) applies at once; see `policy.py` for what a policy says.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from .policy import (
    POLICY_SETTING,
    EffectivePolicy,
    MemoryPolicy,
    PolicyError,
    build_policy,
    coerce_policy,
    dump_policy,
    load_policy,
    refuse_secrets,
)
from .record_writer import RecordLock
from .store import ChromaStore

log = logging.getLogger("mnemic")


class NamespacePolicy:
    def __init__(self, store: ChromaStore, namespace: str, lock: RecordLock) -> None:
        self._store = store
        self._namespace = namespace
        # The record lock: a policy change waits for a write batch in progress, never interleaves.
        self._lock = lock

    def effective(self) -> EffectivePolicy:
        stored = load_policy(self._store.get_setting(POLICY_SETTING))
        if stored is None:
            return EffectivePolicy(policy=MemoryPolicy(), source="default")
        return EffectivePolicy(policy=stored, source="stored")

    def current(self) -> MemoryPolicy:
        return self.effective().policy

    def store(self, policy: MemoryPolicy | Mapping[str, Any] | str | None, changes: Mapping[str, Any]
              ) -> EffectivePolicy:
        """Replace the stored policy with `policy`, or change only the fields in `changes`."""
        if policy is None and not changes:
            raise ValueError("set_policy() needs a policy or fields to change, e.g. set_policy(mode='auto')")
        base = coerce_policy(policy) if policy is not None else self.current()
        if changes:
            base = build_policy({**dump_policy(base), **changes}, name="set_policy()")
        refuse_secrets(base)
        with self._lock:
            self._store.put_setting(POLICY_SETTING, dump_policy(base))
        log.info("memory policy for namespace %r: mode=%s inject=%s", self._namespace, base.mode, base.inject)
        return EffectivePolicy(policy=base, source="stored")

    def require_writes(self, action: str) -> MemoryPolicy:
        """The policy in force; PolicyError when it forbids writes (mode `off`)."""
        policy = self.current()
        if policy.mode == "off":
            raise PolicyError(action, mode=policy.mode, namespace=self._namespace)
        return policy
