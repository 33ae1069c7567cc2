"""The operator CLI: per-user by default, honest errors, and the same store the API sees."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from mnemic import Memory
from mnemic.cli.main import cli
from mnemic.core.embeddings import HashEmbedder


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MNEMIC_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("MNEMIC_EMBEDDER", "hash")
    Memory(tmp_path / "store", embedder=HashEmbedder()).close()  # commands that only read need a store
    runner = CliRunner()

    def invoke(*args: str, ok: bool = True) -> str:
        result = runner.invoke(cli, list(args), catch_exceptions=False)
        assert (result.exit_code == 0) is ok, result.output
        return result.output

    return invoke


def test_memory_commands_round_trip(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = run("memory", "remember", "--user", "alice", "Alice prefers bullet points.")
    record_id = out.split()[0]
    run("memory", "remember", "--user", "bob", "Bob likes chess.")
    listed = run("memory", "list", "--user", "alice", "--json")
    assert "Alice prefers bullet points." in listed and "Bob likes chess." not in listed
    assert "bullet points" in run("memory", "recall", "--user", "alice", "bullet points")
    assert "No relevant memories found." in run("memory", "recall", "--user", "bob", "bullet points")
    run("memory", "invalidate", record_id, "--reason", "changed her mind")
    assert "Alice prefers" not in run("memory", "list", "--user", "alice", "--json")
    history = run("memory", "history", record_id)
    assert "invalidate" in history and "changed her mind" in history
    assert "erased 1" in run("memory", "forget", "--user", "bob", "--yes")
    with Memory(tmp_path / "store", embedder=HashEmbedder()) as memory:
        assert memory.list(user_id="bob") == []
        assert memory.get(record_id).state == "invalid"


def test_listing_needs_a_user_or_an_explicit_all_users(run) -> None:  # type: ignore[no-untyped-def]
    assert "--all-users" in run("memory", "list", ok=False)
    assert "--all-users" in run("memory", "forget", "--yes", ok=False)
    run("memory", "list", "--all-users")


def test_unknown_id_is_a_clear_error(run) -> None:  # type: ignore[no-untyped-def]
    assert "no memory with id 'nope'" in run("memory", "delete", "nope", ok=False)


def test_a_missing_file_and_an_empty_scope_are_clear_errors_that_erase_nothing(  # type: ignore[no-untyped-def]
        run, tmp_path: Path) -> None:
    missing = tmp_path / "no_such_file.txt"
    out = run("knowledge", "add-file", str(missing), ok=False)
    assert "Error: " in out and "no such file" in out and "Traceback" not in out
    run("memory", "remember", "--user", "alice", "Alice prefers tea.")
    assert "names no scope" in run("memory", "forget", "--all-users", "--scope", "", "--yes", ok=False)
    assert "Alice prefers tea." in run("memory", "list", "--user", "alice", "--json")


def test_a_mistyped_store_is_an_error_and_no_store_is_made(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    typo = tmp_path / "stroe"
    for command in (["memory", "list", "--all-users"], ["memory", "recall", "--user", "alice", "tea"],
                    ["policy", "get"], ["knowledge", "search", "tea"]):
        out = run(*command, "--store", str(typo), ok=False)
        assert "no mnemic store at" in out and "--store" in out
    assert not typo.exists()
    run("memory", "remember", "--user", "alice", "Alice prefers tea.", "--store", str(typo))  # adding makes one
    assert "Alice prefers tea." in run("memory", "list", "--user", "alice", "--json", "--store", str(typo))


def test_a_mistyped_namespace_is_an_error_and_no_namespace_is_made(  # type: ignore[no-untyped-def]
        run, tmp_path: Path) -> None:
    """`memory list -n suport` answered an empty table and left the namespace behind, tied to the
    CLI's embedder: the agent opening it later with its own embedder got EmbedderMismatchError."""
    run("memory", "remember", "--user", "alice", "Alice prefers tea.", "-n", "support")
    for command in (["memory", "list", "--user", "alice"], ["memory", "list", "--all-users"],
                    ["memory", "recall", "--user", "alice", "tea"], ["memory", "history", "nope"],
                    ["memory", "forget", "--user", "alice", "--yes"], ["policy", "get"],
                    ["knowledge", "list"], ["knowledge", "search", "tea"], ["lessons", "list", "--all-users"],
                    ["kickoffs", "list", "--all-users"], ["kickoffs", "show", "nope"], ["checkpoints", "list"]):
        out = run(*command, "-n", "suport", ok=False)
        assert "no namespace 'suport' in the store at" in out, command
        assert "'default', 'support'" in out and "--namespace" in out, command
    with Memory(tmp_path / "store", namespace="suport", embedder=HashEmbedder(dimension=64)) as memory:
        assert memory.list(user_id="alice") == []  # a new namespace: the agent's own embedder is taken
    run("memory", "remember", "--user", "alice", "Alice prefers coffee.", "-n", "other")  # adding makes one
    assert "Alice prefers coffee." in run("memory", "list", "--user", "alice", "--json", "-n", "other")
    assert "Alice prefers tea." in run("memory", "list", "--user", "alice", "--json", "-n", "support")

def test_policy_and_knowledge(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert '"source": "default"' in run("policy", "get")
    out = run("policy", "set", "--mode", "auto", "--knowledge", "on")
    assert '"mode": "auto"' in out and '"knowledge": true' in out
    assert '"source": "stored"' in run("policy", "get")
    run("knowledge", "add", "--verbatim", "Refunds are processed within 5 business days.")
    doc = tmp_path / "hours.md"
    doc.write_text("# Opening hours\n\nThe shop opens at 9 and closes at 17 on weekdays.\n")
    run("knowledge", "add-file", str(doc))
    assert "Refunds" in run("knowledge", "search", "how long do refunds take")
    assert "hours.md" in run("knowledge", "list", "--json")
    assert "--yes" in run("knowledge", "clear", ok=False)
    assert "removed" in run("knowledge", "clear", "--yes")


MARKUP = ["Bob wrote [/] in his notes about tractors.",
          "Bob's favourite colour is [bold red]teal[/bold red], see [link=https://evil.example]docs[/link]."]


def test_stored_text_is_shown_as_written_never_read_as_markup(  # type: ignore[no-untyped-def]
        run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fact holding "[/]" failed every view of it with a rich MarkupError traceback (`memory
    remember` and `invalidate` after they had changed the store); "[link=...]" or "[bold red]"
    in a fact was rendered, hiding what the fact says."""
    from mnemic.core.lessons import LessonPlace, LessonStore

    monkeypatch.setenv("COLUMNS", "400")  # tables are read whole, not folded
    ids = [run("memory", "remember", "--user", "bob", text).split()[0] for text in MARKUP]
    with Memory(tmp_path / "store", embedder=HashEmbedder()) as memory:
        memory.knowledge.add("Refunds take [/] five days, [bold]see[/bold] the desk.", verbatim=True, source="faq[/]")
        LessonStore(memory).learn(["Use [/] sparingly, and [italic]cite[/italic]."], user_id="bob",
                                  place=LessonPlace("writer", "draft"))
    shown = {
        "list": run("memory", "list", "--user", "bob"),
        "list all": run("memory", "list", "--all-users"),
        "recall": run("memory", "recall", "--user", "bob", "tractors colour"),
        "history": run("memory", "history", ids[0]),
        "knowledge list": run("knowledge", "list"),
        "knowledge search": run("knowledge", "search", "refunds"),
        "lessons": run("lessons", "list", "--user", "bob"),
    }
    for name in ("list", "list all", "recall"):
        assert all(text in shown[name] for text in MARKUP), name
    assert MARKUP[0] in shown["history"]
    for name in ("knowledge list", "knowledge search"):
        assert "Refunds take [/] five days, [bold]see[/bold] the desk." in shown[name], name
        assert "faq[/]" in shown[name], name
    assert "Use [/] sparingly, and [italic]cite[/italic]." in shown["lessons"]
    assert MARKUP[1] in run("memory", "invalidate", "--reason", "no [/] more", ids[1])
    assert "no [/] more" in run("memory", "history", ids[1])


def test_an_unforeseen_failure_is_an_error_line_not_a_traceback(  # type: ignore[no-untyped-def]
        run, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the disk said no")

    monkeypatch.setattr(Memory, "list", broken)
    out = run("memory", "list", "--user", "alice", ok=False)
    assert "Error: RuntimeError: the disk said no" in out and "Traceback" not in out


def test_an_error_quoting_stored_text_is_one_line(run) -> None:  # type: ignore[no-untyped-def]
    # A reason holding a line break made the "Error: ..." of `memory confirm` two lines.
    record_id = run("memory", "remember", "--user", "alice", "Alice has a boat.").split()[0]
    run("memory", "invalidate", "--reason", "sold it\nError: fake second line", record_id)
    out = run("memory", "confirm", record_id, ok=False)
    assert out.count("\n") == 1 and out.startswith("Error: ") and "sold it\\nError: fake second line" in out


# ESC sequences that clear the screen, recolour, retitle the window (OSC ... BEL), a carriage return
# that rewrites the line, a C1 CSI, and a bidi override that reverses what follows on screen.
CONTROL = "Prices \x1b[2J\x1b[31min red\x1b[0m \x1b]0;pwned\x07 over\rwritten \x9b1m \u202eesrever"
CONTROL_SHOWN = "Prices \\x1b[2J\\x1b[31min red\\x1b[0m \\x1b]0;pwned\\x07 over\\rwritten \\x9b1m \\u202eesrever"


def test_control_characters_in_stored_text_are_shown_never_sent_to_the_terminal(  # type: ignore[no-untyped-def]
        run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lesson or reviewer name holding ESC/OSC/BEL reached the operator's terminal raw through
    `lessons list` (rich escapes markup, not control characters), as facts, knowledge and kickoff
    outputs did through their commands: it could clear the screen or rewrite the rows above."""
    import json

    from mnemic.core.lessons import LessonPlace, LessonStore

    monkeypatch.setenv("COLUMNS", "1000")  # rows are read whole, not folded
    with Memory(tmp_path / "store", embedder=HashEmbedder()) as memory:
        fact = memory.remember(CONTROL, user_id="bob")
        assert fact is not None
        chunk = memory.knowledge.add(CONTROL, verbatim=True, source=f"faq {CONTROL}").added[0]
        lesson = LessonStore(memory).learn([CONTROL], user_id="bob", place=LessonPlace("writer", "draft"),
                                           reviewer=f"eve {CONTROL}")[0]
        kickoff = memory.runs.begin(group="k1", group_name=f"crew {CONTROL}", user_id="bob", inputs={"q": CONTROL})
        memory.runs.record_step(kickoff.run_id, 0, {"task_id": "t-1", "agent": CONTROL,
                                                    "output": {"raw": CONTROL, "description": CONTROL}})
    shown = {
        "memory list": run("memory", "list", "--user", "bob"),
        "memory recall": run("memory", "recall", "--user", "bob", "prices in red"),
        "memory history": run("memory", "history", fact.id),
        "knowledge list": run("knowledge", "list"),
        "knowledge search": run("knowledge", "search", "prices in red"),
        "lessons list": run("lessons", "list", "--user", "bob"),
        "kickoffs list": run("kickoffs", "list", "--all-users"),
        "kickoffs show": run("kickoffs", "show", kickoff.run_id),
        "lessons invalidate": run("lessons", "invalidate", lesson.id, "--reason", "stale"),
        "memory invalidate": run("memory", "invalidate", "--reason", "stale", fact.id),
        "knowledge delete": run("knowledge", "delete", chunk.id),
    }
    for command, output in shown.items():
        assert not any(char in output for char in "\x1b\x07\r\x9b\u202e"), command
    for command in ("memory list", "memory recall", "knowledge list", "knowledge search", "kickoffs show",
                    "memory invalidate", "knowledge delete"):
        assert CONTROL_SHOWN in shown[command], command  # as written, its control characters made visible
    one_line = CONTROL_SHOWN.replace("\\r", " ")  # a lesson and its provenance are kept on one line
    assert one_line in shown["lessons list"] and f"eve {one_line}" in shown["lessons list"]
    assert "\\x1b[2J" in shown["kickoffs list"] and "\\x1b[2J" in shown["memory history"]
    # --json is unchanged: the text exactly as stored (JSON escapes the control characters itself).
    listed = json.loads(run("lessons", "list", "--user", "bob", "--json", "--include-invalid"))
    assert listed[0]["text"] == CONTROL.replace("\r", " ")


def test_a_user_id_holding_a_blank_character_is_shown_so_an_operator_can_tell_it_apart(  # type: ignore[no-untyped-def]
        run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Such ids are refused now, but a store an older version wrote may hold one ("alice" and a
    # Hangul filler printed exactly as "alice"). Stored here the way only mnemic itself can.
    from mnemic.core.identity import InternalUserId

    with Memory(tmp_path / "store", embedder=HashEmbedder()) as memory:
        memory.remember("Alice likes tea.", user_id="alice")
        memory.remember("Mallory likes tea.", user_id=InternalUserId("alice\u3164"))
    monkeypatch.setenv("COLUMNS", "400")  # tables are read whole, not folded
    shown = run("memory", "list", "--all-users")
    assert "alice\\u3164" in shown and "alice\u3164" not in shown
