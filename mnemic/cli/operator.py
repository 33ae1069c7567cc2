"""The operator's commands: see and correct what an agent remembers, set its policy, feed its knowledge.

Every memory command is per user: listing or erasing across users needs `--all-users` said out
loud, so a slip of the keyboard never shows one user's facts while looking at another's.

What they print was written by users, agents and documents: it goes through `terminal` (`cell`,
`plain`), so a fact holding "[/]" or "[link=...]" shows as itself instead of being read as rich markup
(which hid text, made links, or failed the command after it had changed the store), and a control
character shows as `\x1b` instead of reaching the terminal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.progress import Progress, TaskID
from rich.table import Table

from mnemic.core.lock import acquire_store_lock
from mnemic.core.memory import Memory
from mnemic.core.store.chroma import make_persistent_client
from mnemic.core.store.naming import has_namespace, namespaces

from .terminal import cell, id_cell, one_line, plain

_out = Console(highlight=False, emoji=False)
_err = Console(stderr=True, highlight=False, emoji=False)
F = TypeVar("F", bound=Callable[..., Any])


def store_options(command: F) -> F:
    """--store / --server / --namespace / --embedder, shared by every operator command."""
    options = [
        click.option("--store", "store", envvar="MNEMIC_STORE", default=".mnemic", show_default=True,
                     type=click.Path(file_okay=False, path_type=Path), help="Embedded store directory."),
        click.option("--server", envvar="MNEMIC_SERVER", default=None,
                     help="A Chroma server HOST:PORT to use instead of an embedded store."),
        click.option("--namespace", "-n", envvar="MNEMIC_NAMESPACE", default="default", show_default=True,
                     help="The agent's namespace."),
        click.option("--embedder", envvar="MNEMIC_EMBEDDER", default=None,
                     help="Embedder the namespace was built with (default: the local MiniLM)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@contextmanager
def opened(store: Path, server: str | None, namespace: str, embedder: str | None, *,
           create: bool = False) -> Iterator[Memory]:
    """The store a command works on. Only commands that add something (`create`) make a store or
    a namespace where there is none: a mistyped --store or --namespace must not answer "nothing
    there" from a new empty one, nor leave one behind (a namespace keeps the embedder it was
    first opened with, so a stray one would later refuse the agent's own)."""
    if not server and not create and not (Path(store).expanduser() / "chroma").is_dir():
        raise click.ClickException(
            f"no mnemic store at {store}: check --store (or MNEMIC_STORE). Commands that add memories, "
            "knowledge or a policy create one.")
    try:
        if server:
            import chromadb
            from chromadb.config import Settings

            host, _, port = server.rpartition(":")
            if not host or not port.isdigit():
                raise click.BadParameter(f"--server takes HOST:PORT, got {server!r}")
            client = chromadb.HttpClient(host=host, port=int(port), settings=Settings(anonymized_telemetry=False))
            if not create:
                _require_namespace(client, namespace, f"on the Chroma server at {server}")
            memory = Memory(client=client, namespace=namespace, embedder=embedder)
        elif create:
            memory = Memory(store, namespace=namespace, embedder=embedder)
        else:
            memory = _open_existing(Path(store).expanduser().resolve(), namespace, embedder, shown=store)
    except click.ClickException:
        raise
    except Exception as exc:
        raise click.ClickException(one_line(exc)) from exc
    try:
        yield memory
    except (KeyError, ValueError, TypeError, OSError) as exc:  # OSError: a missing or unreadable file
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        raise click.ClickException(one_line(message)) from exc  # it may quote stored text
    finally:
        memory.close()


def _require_namespace(client: Any, namespace: str, where: str) -> None:
    name = namespace.strip()
    if not name or has_namespace(client, name):
        return  # a blank one is refused by Memory, with its own message
    known = ", ".join(repr(n) for n in namespaces(client)) or "none"
    raise click.ClickException(
        f"no namespace {name!r} {where} (namespaces there: {known}): check --namespace (or MNEMIC_NAMESPACE). "
        "Commands that add memories, knowledge or a policy create one.")


def _open_existing(path: Path, namespace: str, embedder: str | None, *, shown: Path) -> Memory:
    """A Memory on a namespace the embedded store already holds; nothing is created otherwise."""
    lock = acquire_store_lock(path)  # the lock Memory takes (shared within a process): no other writer meanwhile
    try:
        client = make_persistent_client(path / "chroma")
        try:
            _require_namespace(client, namespace, f"in the store at {shown}")
            return Memory(path, namespace=namespace, embedder=embedder)
        finally:
            client.close()  # Memory's own client keeps Chroma's shared system open
    finally:
        lock.release()


def _records_table(records: list[Any], title: str) -> Table:
    table = Table(title=cell(title))
    for column in ("id", "created", "user", "author", "source", "state", "scope", "fact"):
        table.add_column(column, overflow="fold")
    for r in records:
        state = "expired" if r.is_expired() else r.state
        table.add_row(cell(r.id), cell(r.created_at.strftime("%Y-%m-%d %H:%M")), id_cell(r.user_id),
                      *(cell(value) for value in (r.author, r.source_kind, state, r.scope, r.text)))
    return table


def _as_json(items: list[Any]) -> None:
    click.echo(json.dumps([item.model_dump(mode="json") for item in items], indent=2))


# -- memory --------------------------------------------------------------------------------------

@click.group("memory")
def memory_group() -> None:
    """See and correct what an agent remembers about a user."""


@memory_group.command("list")
@store_options
@click.option("--user", "user_id", default=None, help="Whose facts to list.")
@click.option("--all-users", is_flag=True, help="List every user's facts (operator overview).")
@click.option("--scope", default=None)
@click.option("--include-invalid", is_flag=True)
@click.option("--hide-pending", is_flag=True)
@click.option("--limit", default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def list_command(store: Path, server: str | None, namespace: str, embedder: str | None, user_id: str | None,
                 all_users: bool, scope: str | None, include_invalid: bool, hide_pending: bool, limit: int,
                 as_json: bool) -> None:
    """List facts, newest first."""
    if (user_id is None) == (not all_users):
        raise click.UsageError("say whose facts: --user USER, or --all-users")
    with opened(store, server, namespace, embedder) as memory:
        records = memory.list(user_id=user_id, scope=scope, include_invalid=include_invalid,
                              include_pending=not hide_pending, limit=limit)
        if as_json:
            _as_json(records)
        else:
            _out.print(_records_table(records, f"{namespace}: {user_id or 'all users'} ({len(records)})"))


@memory_group.command("remember")
@store_options
@click.option("--user", "user_id", required=True)
@click.option("--scope", default=None)
@click.argument("text")
def remember_command(store: Path, server: str | None, namespace: str, embedder: str | None, user_id: str,
                     scope: str | None, text: str) -> None:
    """Add one fact as written, attributed to the operator."""
    with opened(store, server, namespace, embedder, create=True) as memory:
        record = memory.remember(text, user_id=user_id, scope=scope, author="operator", source_kind="operator",
                                 actor="operator")
        if record is None:
            raise click.ClickException("not stored: the text looks like a secret or sensitive data")
        _out.print(plain(f"{record.id}  {record.state}  {record.text}"), markup=False)


@memory_group.command("recall")
@store_options
@click.option("--user", "user_id", required=True)
@click.option("--limit", default=5, show_default=True)
@click.argument("query")
def recall_command(store: Path, server: str | None, namespace: str, embedder: str | None, user_id: str,
                   limit: int, query: str) -> None:
    """What recall would give the agent for this user and query, with the reasons."""
    with opened(store, server, namespace, embedder) as memory:
        matches = memory.recall(query, user_id=user_id, limit=limit)
        if not matches:
            _out.print("No relevant memories found.")
        for match in matches:
            _out.print(f"{match.score:.3f}  {cell(match.record.text)}\n       [dim]{cell(match.explanation)}[/]")


def _lifecycle(name: str, help_text: str) -> Callable[[Callable[..., Any]], click.Command]:
    def wrap(action: Callable[..., Any]) -> click.Command:
        @memory_group.command(name, help=help_text)
        @store_options
        @click.option("--actor", default="operator", show_default=True)
        @click.argument("record_id")
        def command(store: Path, server: str | None, namespace: str, embedder: str | None, actor: str,
                    record_id: str, **extra: Any) -> None:
            with opened(store, server, namespace, embedder) as memory:
                _out.print(plain(action(memory, record_id, actor=actor, **extra)), markup=False)

        return command

    return wrap


@_lifecycle("confirm", "Let a pending fact (from a tool result or document) be served.")
def _confirm(memory: Memory, record_id: str, *, actor: str) -> str:
    return f"confirmed: {memory.confirm(record_id, actor=actor).text}"


@_lifecycle("delete", "Remove one fact outright (its history keeps a tombstone).")
def _delete(memory: Memory, record_id: str, *, actor: str) -> str:
    memory.delete(record_id, actor=actor)
    return f"deleted {record_id}"


@_lifecycle("history", "Every change to one fact: who, when, what, why.")
def _history(memory: Memory, record_id: str, *, actor: str) -> str:
    lines = []
    for e in memory.history(record_id):
        change = f"{e.before!r} → {e.after!r}" if e.before != e.after else repr(e.after)
        lines.append(f"{e.at:%Y-%m-%d %H:%M:%S}  v{e.version}  {e.action:<10} {e.actor:<10} {change}"
                     + (f"  ({e.reason})" if e.reason else ""))
    return "\n".join(lines)


@memory_group.command("invalidate")
@store_options
@click.option("--actor", default="operator", show_default=True)
@click.option("--reason", required=True, help="Why the fact is no longer true.")
@click.argument("record_id")
def invalidate_command(store: Path, server: str | None, namespace: str, embedder: str | None, actor: str,
                       reason: str, record_id: str) -> None:
    """Mark one fact no longer true: kept, hidden, never served."""
    with opened(store, server, namespace, embedder) as memory:
        _out.print(plain(f"invalidated: {memory.invalidate(record_id, reason=reason, actor=actor).text}"),
                   markup=False)


@memory_group.command("forget")
@store_options
@click.option("--user", "user_id", default=None, help="Erase this user's facts (the erasure request).")
@click.option("--scope", default=None)
@click.option("--category", "categories", multiple=True)
@click.option("--older-than-days", type=float, default=None)
@click.option("--all-users", is_flag=True, help="Apply the other criteria across every user.")
@click.option("--yes", is_flag=True, help="Do it without asking.")
def forget_command(store: Path, server: str | None, namespace: str, embedder: str | None, user_id: str | None,
                   scope: str | None, categories: tuple[str, ...], older_than_days: float | None,
                   all_users: bool, yes: bool) -> None:
    """Erase facts matching every criterion given. Works whatever the memory policy is."""
    if (user_id is None) == (not all_users):
        raise click.UsageError("say whose facts: --user USER, or --all-users with --scope/--category/--older-than-days")
    if all_users and scope is None and not categories and older_than_days is None:
        raise click.UsageError("--all-users needs --scope, --category or --older-than-days")
    if not yes and not click.confirm(f"Erase matching facts of {user_id or 'every user'} in {namespace}?"):
        raise click.Abort()
    with opened(store, server, namespace, embedder) as memory:
        erased = memory.forget(user_id=user_id, scope=scope, categories=list(categories) or None,
                               older_than=older_than_days * 86400 if older_than_days is not None else None)
        _out.print(f"erased {int(erased)} facts")
        for label, count in sorted(erased.retained.items()):
            _out.print(plain(f"erased {count} {label}"), markup=False)
        for place in erased.unreachable:
            _err.print(f"[yellow]could not erase[/] {cell(str(place))}")


# -- policy --------------------------------------------------------------------------------------

@click.group("policy")
def policy_group() -> None:
    """The namespace's memory policy (off / auto / explicit and its settings)."""


@policy_group.command("get")
@store_options
def policy_get(store: Path, server: str | None, namespace: str, embedder: str | None) -> None:
    with opened(store, server, namespace, embedder) as memory:
        effective = memory.effective_policy()
        click.echo(json.dumps({"namespace": namespace, "source": effective.source,
                               "policy": effective.policy.model_dump(mode="json")}, indent=2))


@policy_group.command("set")
@store_options
@click.option("--mode", type=click.Choice(["off", "auto", "explicit"]), default=None)
@click.option("--inject", type=click.Choice(["none", "profile"]), default=None)
@click.option("--ttl", "ttl_seconds", type=float, default=None, help="Seconds until a fact expires; 0 = never.")
@click.option("--exclude-sensitive", type=click.Choice(["on", "off"]), default=None)
@click.option("--topics", default=None, help="Comma-separated topics the extractor keeps.")
@click.option("--instructions", default=None)
@click.option("--knowledge", type=click.Choice(["on", "off"]), default=None)
def policy_set(store: Path, server: str | None, namespace: str, embedder: str | None, **fields: Any) -> None:
    """Change only the settings given; the others keep their value."""
    changes = {k: v for k, v in fields.items() if v is not None}
    for flag in ("exclude_sensitive", "knowledge"):
        if flag in changes:
            changes[flag] = changes[flag] == "on"
    if "topics" in changes:
        changes["topics"] = [t for t in changes["topics"].split(",") if t.strip()]
    if not changes:
        raise click.UsageError("give at least one setting, e.g. --mode auto")
    with opened(store, server, namespace, embedder, create=True) as memory:
        effective = memory.set_policy(**changes)
        click.echo(json.dumps({"namespace": namespace, "source": effective.source,
                               "policy": effective.policy.model_dump(mode="json")}, indent=2))


# -- knowledge -----------------------------------------------------------------------------------

@click.group("knowledge")
def knowledge_group() -> None:
    """Operator-written facts every user of the agent reads."""


@knowledge_group.command("add")
@store_options
@click.option("--verbatim", is_flag=True, help="Store the text as one fact, exactly as written.")
@click.option("--source", default=None)
@click.argument("text")
def knowledge_add(store: Path, server: str | None, namespace: str, embedder: str | None, verbatim: bool,
                  source: str | None, text: str) -> None:
    with opened(store, server, namespace, embedder, create=True) as memory:
        result = memory.knowledge.add(text, verbatim=verbatim, source=source)
        _out.print(f"added {len(result.added)} facts ({len(result.duplicates)} already known)")


@knowledge_group.command("add-file")
@store_options
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def knowledge_add_file(store: Path, server: str | None, namespace: str, embedder: str | None,
                       paths: tuple[Path, ...]) -> None:
    """Ingest .txt, .md, .json, .csv or .pdf files, chunked with overlap."""
    with opened(store, server, namespace, embedder, create=True) as memory, Progress(console=_err) as bar:
        for path in paths:
            task = bar.add_task(cell(str(path)), total=None)

            def advance(done: int, total: int, task: TaskID = task) -> None:
                bar.update(task, completed=done, total=total)

            result = memory.knowledge.add_file(path, progress=advance)
            bar.update(task, description=cell(f"{path}: {len(result.added)} chunks"))


@knowledge_group.command("search")
@store_options
@click.option("--limit", default=5, show_default=True)
@click.argument("query")
def knowledge_search(store: Path, server: str | None, namespace: str, embedder: str | None, limit: int,
                     query: str) -> None:
    with opened(store, server, namespace, embedder) as memory:
        hits = memory.knowledge.search(query, limit=limit)
        if not hits:
            _out.print("No relevant knowledge found.")
        for hit in hits:
            source = cell(hit.chunk.source or "no source")
            _out.print(f"{hit.score:.3f}  {cell(hit.chunk.text)}  [dim]({source})[/]")


@knowledge_group.command("list")
@store_options
@click.option("--limit", default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def knowledge_list(store: Path, server: str | None, namespace: str, embedder: str | None, limit: int,
                   as_json: bool) -> None:
    with opened(store, server, namespace, embedder) as memory:
        chunks = memory.knowledge.list(limit=limit)
        if as_json:
            _as_json(chunks)
            return
        table = Table(title=cell(f"{namespace}: knowledge ({len(chunks)})"))
        for column in ("id", "source", "text"):
            table.add_column(column, overflow="fold")
        for chunk in chunks:
            table.add_row(cell(chunk.id), cell(chunk.source or ""), cell(chunk.text))
        _out.print(table)


@knowledge_group.command("delete")
@store_options
@click.argument("chunk_id")
def knowledge_delete(store: Path, server: str | None, namespace: str, embedder: str | None, chunk_id: str) -> None:
    with opened(store, server, namespace, embedder) as memory:
        _out.print(plain(f"deleted: {memory.knowledge.delete(chunk_id).text}"), markup=False)


@knowledge_group.command("clear")
@store_options
@click.option("--yes", is_flag=True, help="Confirm emptying the whole knowledge store.")
def knowledge_clear(store: Path, server: str | None, namespace: str, embedder: str | None, yes: bool) -> None:
    if not yes:
        raise click.UsageError("clear empties the knowledge store for every user: add --yes to confirm")
    with opened(store, server, namespace, embedder) as memory:
        _out.print(f"removed {memory.knowledge.clear(confirm=True)} facts")


