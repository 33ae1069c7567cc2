"""A secret written so that the rules do not read it as written is still never stored.

Found by an attack, each stored before: a password whose *label* is disguised (full-width letters,
a Cyrillic or Greek look-alike, mathematical bold, a blank Hangul filler inside the word), cards and
SSNs in full-width or other scripts' digits or split across a tab or line break, and a token with
blank-rendering letters every few characters. The text is folded once and every rule runs on the
folded copy; a hit is mapped back to the span of the original text, so redaction removes the
disguised characters themselves. Ordinary text in those scripts must stay storable.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripted_llm import ScriptedLLM
from secret_corpus import store_bytes

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.safety import REDACTED, find_secrets, redact

GITHUB_TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY3zA5"


def _every_eighth(value: str, filler: str) -> str:
    return filler.join(value[i:i + 8] for i in range(0, len(value), 8))


def _arabic_indic(digits: str) -> str:
    return "".join(chr(0x0660 + int(d)) if d.isdigit() else d for d in digits)


# (what is disguised, the text, the secret's characters as written)
DISGUISED_LABELS = [
    ("full-width assignment", "DB ｐａｓｓｗｏｒｄ＝Fw7Secret!", "Fw7Secret"),
    ("full-width sentence", "ｍｙ ｐａｓｓｗｏｒｄ ｉｓ Fw8Secret!", "Fw8Secret"),
    ("cyrillic a in the label", "my p\u0430ssword is Cy9Secret!", "Cy9Secret"),
    ("greek o in the label", "passw\u03bfrd=Gr7Secret!", "Gr7Secret"),
    ("math bold label", "my 𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝 is Mb6Secret!", "Mb6Secret"),
    ("hangul filler in the label", "my pass\u3164word is Hf5Secret!", "Hf5Secret"),
    ("greek capitals for PIN", "my \u03a1\u0399\u039d is 4471", "4471"),
    ("full-width value too", "ｍｙ ｐａｓｓｗｏｒｄ ｉｓ Ｆｗ９Ｓｅｃｒｅｔ！", "Ｆｗ９Ｓｅｃｒｅｔ"),
]
DISGUISED_NUMBERS = [
    ("full-width card", "My Visa card number is ４１１１ １１１１ １１１１ １１１１",
     "４１１１ １１１１ １１１１ １１１１"),
    ("card across a line break", "My Visa card number is 4111 1111\n1111 1111", "4111 1111\n1111 1111"),
    ("card split by tabs", "My Visa card number is 4111\t1111\t1111\t1111", "4111\t1111\t1111\t1111"),
    ("amex on three lines", "card:\n3782\n822463\n10005", "3782\n822463\n10005"),
    ("arabic-indic card", "card " + _arabic_indic("4111 1111 1111 1111"), _arabic_indic("4111 1111 1111 1111")),
    ("full-width SSN", "My SSN is ０７８-０５-１１２０", "０７８-０５-１１２０"),
]
BLANK_LETTERS = ["\u3164", "\u2800", "\uffa0", "\u115f", "\u1160", "\u180e", "\u200b", "\u2060", "\ufe0f"]
DISGUISED = [*DISGUISED_LABELS, *DISGUISED_NUMBERS] + [
    (f"token with U+{ord(blank):04X} inside", f"We deploy with {_every_eighth(GITHUB_TOKEN, blank)} on Fridays",
     _every_eighth(GITHUB_TOKEN, blank)) for blank in BLANK_LETTERS]

# Ordinary text in the same scripts and shapes: folding it must not make it read as a secret.
ORDINARY = [
    "ＰＩＮは４桁です。",
    "PINは4桁です。",
    "密码是6位数字。",
    "비밀번호는 8자리 이상이어야 합니다.",
    "ＡＢＣ社の会議は３時からです。",
    "Мой пароль очень длинный и надежный.",
    "Η ΡΟΗ του νερού είναι καλή και ΤΟ ΚΑΙ ΕΙΝΑΙ κεφαλαία.",
    "Το συνθηματικό μου το ξέχασα.",
    "We met at the café ☕️ and talked about the trip ✈️ to Kyoto.",
    "ｐａｓｓｗｏｒｄ ｒｅｓｅｔ ｌｉｎｋ ｉｓ ｂｅｌｏｗ",
    "The passｗord must be 12 characters long.",
    "Totals by year:\n2019\n2020\n2021\n2022",
    "Scores\t4111\t1111\t1111\t1112",
    "٢٠٢٤ was a good year.",
]


def _leaked(secrets: list[tuple[str, str, str]], stored: bytes) -> list[str]:
    """The secrets whose bytes are in the store files. A 4-digit PIN also occurs by chance in ids,
    hashes and timestamps: those are covered by the refusal itself."""
    return [what for what, _, secret in secrets if len(secret) >= 6 and secret.encode() in stored]


@pytest.mark.parametrize(("what", "text", "secret"), DISGUISED, ids=[what for what, _, _ in DISGUISED])
def test_a_disguised_secret_is_found_and_redacted_with_its_disguise(what: str, text: str, secret: str) -> None:
    assert find_secrets(text), f"missed: {what}"
    clean, _ = redact(text)
    assert REDACTED in clean and secret not in clean
    assert not find_secrets(clean)


@pytest.mark.parametrize("blank", BLANK_LETTERS, ids=[f"U+{ord(b):04X}" for b in BLANK_LETTERS])
def test_redaction_removes_a_token_with_the_blanks_inside_it(blank: str) -> None:
    # The hit on the folded copy maps back to the whole span as written, blanks included.
    text = f"We deploy with {_every_eighth(GITHUB_TOKEN, blank)} on Fridays"
    assert redact(text)[0] == f"We deploy with {REDACTED} on Fridays"


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_in_other_scripts_and_forms_is_not_a_secret(text: str) -> None:
    assert find_secrets(text) == [], [text[h.start:h.end] for h in find_secrets(text)]


def test_remember_refuses_every_disguised_secret_and_none_reaches_the_store_files(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as memory:
        for i, (_, text, _) in enumerate(DISGUISED):
            assert memory.remember(text, user_id=f"u{i}") is None, text
        for text in ORDINARY:
            assert memory.remember(text, user_id="bob") is not None, text
        assert memory.stats.secrets_refused >= len(DISGUISED)
    assert not _leaked(DISGUISED, store_bytes(tmp_path))


def test_observe_redacts_a_disguised_label_before_the_model_sees_it(tmp_path: Path) -> None:
    llm = ScriptedLLM(default=json.dumps({"facts": []}))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), llm=llm, policy="auto") as memory:
        for i, (_, text, _) in enumerate(DISGUISED_LABELS):
            memory.observe([{"role": "user", "content": f"I live in Austin. {text}"},
                            {"role": "assistant", "content": "Noted."}], user_id="alice", session_id=f"s{i}")
        memory.drain_writes()
    assert llm.prompts, "the model was never asked"
    prompts = "\n".join(llm.prompts)
    assert "Austin" in prompts
    sent = [what for what, _, secret in DISGUISED_LABELS if secret in prompts]
    assert not sent, sent
    assert not _leaked(DISGUISED_LABELS, store_bytes(tmp_path))
