"""The lock order rule: nothing waits for queued writes while holding the record lock.

Every call that changes records is made right after a burst of queued writes, from one thread and
from eight at once. The calls run in a child process with a deadline, so a deadlock fails this test
(naming the call that hung) instead of hanging the suite.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.writer import LockOrderError

DEADLINE_S = 300

SCRIPT = textwrap.dedent('''
    import sys
    import threading

    from mnemic import Memory
    from mnemic.core.embeddings import HashEmbedder

    def queue_then(memory, user, call):
        base = memory.remember(f"{user} keeps a base fact about gardening.", user_id=user)
        pending = memory.remember(f"The tool says {user} ordered a blue lamp.", user_id=user,
                                  source_kind="tool_result", author="agent")
        memory.remember_many([f"{user} queued fact number {i} about rivers." for i in range(50)], user_id=user)
        call(memory, user, base.id, pending.id)

    def observe_then_confirm(m, u, base, pending):
        m.set_policy(mode="auto")
        m.observe([{"role": "user", "content": f"I am {u} and I live in Lisbon."}], user_id=u)
        m.confirm(pending)

    CALLS = {
        "update": lambda m, u, base, pending: m.update(base, text=f"{u} changed the base fact."),
        "invalidate": lambda m, u, base, pending: m.invalidate(base, reason="no longer true"),
        "confirm": lambda m, u, base, pending: m.confirm(pending),
        "delete": lambda m, u, base, pending: m.delete(base),
        "forget": lambda m, u, base, pending: m.forget(ids=[base]),
        "forget_user": lambda m, u, base, pending: m.forget(user_id=u),
        "observe_then_confirm": observe_then_confirm,
        "memorize": lambda m, u, base, pending: m.memorize(
            user_id=u, messages=[{"role": "user", "content": f"My name is {u} and I like tea."}]),
        "set_policy": lambda m, u, base, pending: m.set_policy(mode="explicit"),
        "remember": lambda m, u, base, pending: m.remember(f"{u} said one more thing.", user_id=u),
        "note_put": lambda m, u, base, pending: m.notes.put("k", f"{u} note", user_id=u),
        "note_delete": lambda m, u, base, pending: m.notes.delete("k", user_id=u),
        "knowledge_add": lambda m, u, base, pending: m.knowledge.add(f"Knowledge for {u}.", verbatim=True),
        "recall": lambda m, u, base, pending: m.recall("rivers", user_id=u),
        "history": lambda m, u, base, pending: m.history(base),
    }

    def run(threads):
        with Memory(sys.argv[1] + f"/t{threads}", embedder=HashEmbedder()) as memory:
            names = list(CALLS) + (["reset"] if threads == 1 else [])
            for name in names:
                call = CALLS.get(name) or (lambda m, u, base, pending: m.reset())
                print(f"{name} x{threads}", flush=True)
                errors = []

                def work(n, call=call, name=name, errors=errors):
                    try:
                        queue_then(memory, f"{name}-{n}", call)
                    except Exception as exc:
                        errors.append(repr(exc))

                workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
                for w in workers:
                    w.start()
                for w in workers:
                    w.join()
                if errors:
                    print("ERROR", name, errors[0], flush=True)
                    sys.exit(2)
                memory.drain_writes()
    run(1)
    run(8)
    print("all returned", flush=True)
''')


def test_every_change_right_after_queued_writes_returns(tmp_path: Path) -> None:
    try:
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True,
                              timeout=DEADLINE_S)
    except subprocess.TimeoutExpired as hung:
        out = hung.stdout.decode() if isinstance(hung.stdout, bytes) else (hung.stdout or "")
        last = out.strip().splitlines()[-1] if out.strip() else "before the first call"
        pytest.fail(f"deadlock: {last} did not return within {DEADLINE_S} s")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert done.stdout.strip().endswith("all returned")


def test_waiting_for_queued_writes_while_holding_the_record_lock_fails_fast(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        memory.remember_many(["Queued fact about rivers."], user_id="u")
        with memory._records.lock, pytest.raises(LockOrderError, match="lock order"):
            memory.wait_for_writes()
        memory.drain_writes()
        assert len(memory.list(user_id="u")) == 1


def test_forgetting_a_user_while_holding_the_record_lock_fails_fast(tmp_path: Path) -> None:
    # A queued write holds the namespace's erasure order while it waits for the record lock; an
    # erasure waiting for the order under the record lock would never end.
    import threading
    import time

    outcome: list[BaseException] = []
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        def erase_under_the_lock() -> None:
            with memory._records.lock:
                memory.remember_many(["Queued fact about rivers."], user_id="u")
                time.sleep(0.3)  # the writer takes the order and waits for the record lock
                try:
                    memory.forget(user_id="u")
                except BaseException as exc:
                    outcome.append(exc)

        worker = threading.Thread(target=erase_under_the_lock, daemon=True)
        worker.start()
        worker.join(10)
        assert not worker.is_alive(), "forget() under the record lock hung"
        assert len(outcome) == 1 and isinstance(outcome[0], LockOrderError)
        memory.forget(user_id="u")
        memory.drain_writes()
        assert memory.list(user_id="u") == []
