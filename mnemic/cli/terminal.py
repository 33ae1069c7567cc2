"""Stored text as the operator's terminal shows it: as written, never as orders to the terminal.

What the CLI prints was written by users, reviewers, agents, models and documents. Escaping rich
markup keeps "[/]" from being read by rich, but a control character went through to the terminal
as it was: a lesson or a reviewer's name holding ESC/OSC/BEL sequences could recolour the table,
clear the screen, retitle the window or rewrite the rows above it (hiding what a row says). Every
command therefore prints stored text through this module:

- `plain(value)`: control characters (C0 other than line feed and tab, DEL, C1) and the
  bidirectional overrides that reorder what the eye reads are written out as Python writes them
  (`\\x1b`, `\\u202e`), so the operator sees that they are there and the terminal never acts on them;
- `cell(value)`: `plain`, then escaped for rich markup: for a table cell or a line printed with markup;
- `one_line(value)`: `plain` with line feeds and tabs written out too: for an `Error:` line, which is
  one line whatever the stored text it quotes (a reason, a fact) holds;
- `id_cell(value)`: `cell` with the characters that show nothing written out too (`\\u3164`, a
  variation selector): for a user id, which must not print like another user's (such ids are
  refused, but a store an older version wrote may hold one). Prose keeps them: an emoji needs its
  variation selector and joiners.

`--json` output is left to `json.dumps`, which escapes control characters itself.
"""

from __future__ import annotations

import re
from typing import Any

from rich.markup import escape

from ..core.safety.invisible import INVISIBLE

_KEPT = {"\n", "\t"}  # they lay text out within a cell or a line; they cannot move the cursor elsewhere
_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_VISIBLE = {
    code: (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    for code in [*range(0x00, 0x20), *range(0x7F, 0xA0), *_BIDI]
    if chr(code) not in _KEPT
} | {ord("\r"): "\\r"}


def plain(value: Any) -> str:
    """`value` as text a terminal shows and never obeys (not escaped for rich markup)."""
    return str(value).translate(_VISIBLE)


def one_line(value: Any) -> str:
    """`value` as one line a terminal shows and never obeys."""
    return plain(value).replace("\n", "\\n").replace("\t", "\\t")


def cell(value: Any) -> str:
    """`value` as a table cell, or a part of a line printed with rich markup."""
    return escape(plain(value))


def _written_out(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def id_cell(value: Any) -> str:
    """A user id as a table cell: `cell`, with every character that shows nothing written out."""
    return escape(INVISIBLE.sub(_written_out, plain(value)))


__all__ = ["cell", "id_cell", "one_line", "plain"]
