"""Characters that show nothing: what the secret screen drops before its rules read a text (see
`disguise`), and what a user id may not hold (it would print like another user's id).

Unicode's Default_Ignorable_Code_Point property (DerivedCoreProperties.txt; Python's unicodedata
does not expose it), written out: format characters (zero-width space and joiners, bidi marks, the
soft hyphen, tag characters), marks that only select a form (the combining grapheme joiner, the
variation selectors, the Mongolian free variation selectors), the Hangul fillers and the Khmer
inherent vowels, which are letters and marks Unicode keeps only for compatibility, and the code
points reserved to be ignorable. Beside them, what renders blank although Unicode does not call it
ignorable: the Braille blank (U+2800).

Marks that show (a virama, a vowel sign, an accent) are not here: a name in Hindi or with an accent
holds them.
"""

from __future__ import annotations

import re

DEFAULT_IGNORABLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
BLANK = "\u2800"
INVISIBLE = re.compile(f"[{DEFAULT_IGNORABLE}{BLANK}]")


def shows_nothing(char: str) -> bool:
    """True when `char` (one character) renders as nothing, or as a blank that is no space."""
    return INVISIBLE.match(char) is not None
