"""mnemic in one screen: two users' facts in a persistent store, explained recall, erasure.

Run it twice (`make demo`): the second run finds what the first one stored. Offline, no keys:
the embeddings come from all-MiniLM-L6-v2 computed with numpy on this machine.

    python examples/quickstart.py [STORE_DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from mnemic import Memory

STORE = Path(sys.argv[1] if len(sys.argv) > 1 else ".mnemic-demo")

FACTS = {
    "alice": [
        ("We chose PostgreSQL for the user database.", "/project/atlas", ["decisions"]),
        ("Alice prefers answers as short bullet points.", "/", ["preferences"]),
        ("Alice lives in Lisbon and works in the Europe/Lisbon time zone.", "/", ["personal_info"]),
        ("The atlas project ships its beta on 14 March.", "/project/atlas", ["deadlines"]),
    ],
    "bob": [
        ("Bob is allergic to peanuts.", "/", ["personal_info"]),
        ("Bob's team deploys with Kubernetes on Google Cloud.", "/project/orbit", ["decisions"]),
    ],
}

QUESTIONS = {
    "alice": ["which database did we pick?", "how should replies be formatted?", "when is the beta?"],
    "bob": ["what food should Bob avoid?", "which database did we pick?"],
}


def main() -> None:
    console = Console()
    with Memory(STORE) as memory:
        earlier = {user: len(memory.list(user_id=user)) for user in FACTS}
        if any(earlier.values()):
            console.print(f"[bold green]Second run:[/] {STORE} already holds "
                          + ", ".join(f"{n} facts for {u}" for u, n in earlier.items())
                          + " from an earlier run.")
        else:
            console.print(f"[bold]First run:[/] creating {STORE} (run me again to see it persist).")

        for user, facts in FACTS.items():
            for text, scope, categories in facts:
                # Saying the same thing twice merges into one record: a second run adds nothing.
                memory.remember(text, user_id=user, scope=scope, categories=categories)
        console.print("Stored: " + ", ".join(f"{u}: {len(memory.list(user_id=u))}" for u in FACTS))

        for user, questions in QUESTIONS.items():
            table = Table(title=f"recall for {user}", show_lines=False)
            table.add_column("question")
            table.add_column("score", justify="right")
            table.add_column("memory")
            table.add_column("why")
            for question in questions:
                matches = memory.recall(question, user_id=user, limit=1)
                if not matches:
                    table.add_row(question, "-", "[dim]no relevant memory for this user[/]", "")
                for match in matches:
                    table.add_row(question, f"{match.score:.2f}", match.record.text, match.explanation)
            console.print(table)

        erased = memory.forget(user_id="bob")
        console.print(f"Erased bob: {erased} records removed; bob now has {len(memory.list(user_id='bob'))}.")
        console.print(f"alice still has {len(memory.list(user_id='alice'))} facts in {STORE}.")


if __name__ == "__main__":
    main()
