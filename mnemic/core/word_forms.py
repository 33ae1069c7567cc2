"""Irregular word forms: a question asks what someone "bought" with "buy", where they "went" with
"go", what the "mice" did with "mouse".

Word coverage matches a query word by its porter stem (stems.py), which joins regular forms
("hike", "hiking") but not irregular ones, and questions put verbs in the base form ("What did
she buy?") where the memory is told in the past ("I bought ..."). This table (`word_forms.tsv.gz`,
~850 words, from WordNet 3.0's exception lists, built by `bench/build_word_forms.py`; its license
is `word_forms.LICENSE`) lets a record holding another form of a query word count as holding the
word itself, in full, unlike a related word, which earns a share.

Measured on LoCoMo (bench/tune_locomo.py, R@5/R@10, with the forms applied as full-credit
relatives): tuning half 70.8/78.5 -> 70.9/78.7, held-out half 68.6/77.1 -> 68.8/77.3, most of it
on temporal questions ("When did Melanie go camping?" / "we went camping").
"""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

TABLE_PATH = Path(__file__).with_name("word_forms.tsv.gz")
LICENSE_PATH = Path(__file__).with_name("word_forms.LICENSE")

_lock = threading.Lock()
_table: dict[str, tuple[str, ...]] | None = None


def other_forms(word: str) -> tuple[str, ...]:
    """The irregular forms of a lower-case word's family other than itself ("buy" -> "bought")."""
    return _load().get(word, ())


def _load() -> dict[str, tuple[str, ...]]:
    global _table
    with _lock:
        if _table is None:
            with gzip.open(TABLE_PATH, "rt", encoding="utf-8") as lines:
                _table = {word: tuple(forms.split()) for word, forms in
                          (line.rstrip("\n").split("\t", 1) for line in lines)}
        return _table
