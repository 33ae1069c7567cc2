"""Which passages of a document hold a secret, including one split across two passages.

Knowledge is served to every user, so a credential in a document must not be stored. Screening
each passage alone misses one that a chunk boundary cuts in two: a PDF page ending "admin
password:" and the next starting with the password, or a long CSV cell chunked without overlap.
So besides each passage, the seam between neighbours (the tail of one joined to the head of the
next) is screened too, and a secret found there refuses the passage(s) its characters fall in,
exactly as if the passage had held it whole. Only what the join reveals counts: a hit the cut tail
or head shows on its own comes from cutting it away from its context (a key block's base64 line
without its "BEGIN PUBLIC KEY" header), and the passage screened whole has already been judged.
"""

from __future__ import annotations

from collections.abc import Sequence

from .safety import find_secrets

# Longer than any label-and-value the detector matches, so a seam shows the whole of it.
EDGE_CHARS = 200


def screen(texts: Sequence[str]) -> list[list[str]]:
    """For each text (in document order), the kinds of secret that refuse it; [] for none."""
    kinds: list[set[str]] = [{hit.kind for hit in find_secrets(text)} for text in texts]
    for i in range(len(texts) - 1):
        tail, head = _tail(texts[i]), _head(texts[i + 1])
        seam = len(tail) + 1
        alone = [(h.start, h.end) for h in find_secrets(tail)]
        alone += [(h.start + seam, h.end + seam) for h in find_secrets(head)]
        for hit in find_secrets(tail + "\n" + head):
            if any(hit.start < end and start < hit.end for start, end in alone):
                continue
            if hit.start < len(tail):
                kinds[i].add(hit.kind)
            if hit.end > seam:
                kinds[i + 1].add(hit.kind)
    return [sorted(found) for found in kinds]


def _tail(text: str) -> str:
    # Cut at a space, so no word is shortened into something that looks like a token.
    if len(text) <= EDGE_CHARS:
        return text
    cut = text.find(" ", len(text) - EDGE_CHARS)
    return text[cut + 1:] if cut >= 0 else text[-EDGE_CHARS:]


def _head(text: str) -> str:
    if len(text) <= EDGE_CHARS:
        return text
    cut = text.rfind(" ", 0, EDGE_CHARS)
    return text[:cut] if cut > 0 else text[:EDGE_CHARS]
