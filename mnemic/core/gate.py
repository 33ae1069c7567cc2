"""Whether the Memory that owns a set of components is still open.

The components of a Memory (notes, knowledge, the readers and writers) outlive no call on a closed
one: each public entry point checks this gate first, so a call after `close()` fails with one clear
error instead of a confusing one from a closed SQLite file or Chroma client.
"""

from __future__ import annotations


class OpenGate:
    def __init__(self) -> None:
        self.closed = False

    def check(self) -> None:
        if self.closed:
            raise RuntimeError("this Memory is closed; open a new one")

    def close(self) -> None:
        self.closed = True
