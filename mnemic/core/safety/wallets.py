"""Crypto wallet secrets: BIP-39 seed phrases, hex private keys named as such, and Bitcoin WIF
keys (Base58Check-verified, so no context is needed). Extended private keys (xprv...) are vendor
shapes (see `vendors`).

A seed phrase is found as a run of at least 12 words of the BIP-39 English wordlist, shipped as
package data (`bip39_english.txt`, the 2048 words of the BIP-39 specification, sha256 2f5eed53...;
copied from the MIT-licensed `mnemonic` package). Ordinary English almost never strings 12 such
words together: "the", "a", "is", "of", "and", "to" are not in the list. A shorter run said to be a
seed or recovery phrase is refused too.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from functools import cache
from importlib import resources

from .checksums import base58check_valid
from .hits import SecretHit

MIN_SEED_WORDS = 12
_WORD = re.compile(r"[a-z]+")
_GAP = re.compile(r"[\s,;.\-–|/()\[\]#:\d]{1,8}")  # "1. abandon 2. ability", "abandon, ability", newlines
_SEED_CONTEXT = re.compile(
    r"(?i)\b(?:(?:seed|recovery|mnemonic|backup|secret\s+recovery|wallet|restore)"
    r"(?:\s+(?:phrase|words?|sentence|mnemonic|key))?|mnemonic|seed)\b[^.\n]{0,24}?"
    r"(?:\bis\b|\bare\b|\bwas\b|:|=|-)\s*"
)
# Named as a seed itself ("monero seed:", "my mnemonic is"), not a "seed round" or a "backup plan".
_SEED_NAME = re.compile(
    r"(?i)\b(?:seed(?:\s+(?:phrase|words?))?|mnemonic(?:\s+(?:phrase|words?))?|recovery\s+(?:phrase|words?|seed)|"
    r"wallet\s+(?:seed|words))\s*(?:\bis\b|\bare\b|\bwas\b|:|=|-)"
)
_SENTENCE_WORDS = frozenset(
    """a an the is are was were be been to of in on at and or but it its you your my me i we our they
    that this these those with for from never not no do does don't keep safe write written paper
    share anyone somewhere should must will can has have""".split()
)
_PUNCTUATION_TO_SPACE = str.maketrans({ch: " " for ch in ",.;:!?()[]{}\"'`|/#-0123456789"})
_SEED_CUES = ("seed", "recovery", "mnemonic", "backup", "wallet", "restore", "metamask", "ledger", "trezor", "phrase")
_HEX_KEY = re.compile(r"(?<![A-Za-z0-9])(?:0x)?[0-9a-fA-F]{64}(?![A-Za-z0-9])")
_HEX_CONTEXT = re.compile(
    r"(?i)(?:private|priv|secret|signing|wallet|metamask|eth(?:ereum)?|solana|bitcoin|btc|import|seed|"
    r"mnemonic|keystore|ledger|trezor|phantom)[\s_\-]*(?:key|wallet|keys)?"
)
_WIF = re.compile(r"(?<![A-Za-z0-9])[5KLc9][1-9A-HJ-NP-Za-km-z]{50,51}(?![A-Za-z0-9])")


@cache
@cache
def _wordlist() -> tuple[str, ...]:
    text = resources.files(__package__).joinpath("bip39_english.txt").read_text(encoding="utf-8")
    words = tuple(text.split())
    if len(words) != 2048:
        raise RuntimeError("the BIP-39 wordlist shipped with mnemic is damaged: reinstall mnemic")
    return words


@cache
def bip39_words() -> frozenset[str]:
    return frozenset(_wordlist())


@cache
def _word_index() -> dict[str, int]:
    return {word: i for i, word in enumerate(_wordlist())}


def bip39_checksum_valid(words: list[str]) -> bool:
    """True when `words` (12, 15, 18, 21 or 24 of them) carry a valid BIP-39 checksum."""
    if len(words) not in (12, 15, 18, 21, 24):
        return False
    index = _word_index()
    bits = 0
    for word in words:
        bits = (bits << 11) | index[word]
    checksum_bits = len(words) * 11 // 33
    entropy = (bits >> checksum_bits).to_bytes(len(words) * 11 * 32 // 33 // 8, "big")
    return hashlib.sha256(entropy).digest()[0] >> (8 - checksum_bits) == bits & ((1 << checksum_bits) - 1)


def _runs(lowered: str) -> Iterator[tuple[int, int, list[str], list[str]]]:
    """Runs of wordlist words next to each other: (start, end, words, the gaps between them)."""
    words = bip39_words()
    run: list[str] = []
    gaps: list[str] = []
    run_start = run_end = previous_end = -1
    for match in _WORD.finditer(lowered):
        start, end = match.span()
        adjacent = previous_end >= 0 and (start == previous_end or _GAP.fullmatch(lowered, previous_end, start))
        if match.group() in words and run and adjacent:
            run.append(match.group())
            gaps.append(lowered[previous_end:start])
            run_end = end
        else:
            if len(run) >= MIN_SEED_WORDS:
                yield run_start, run_end, run, gaps
            run, gaps = ([match.group()], []) if match.group() in words else ([], [])
            run_start, run_end = start, end
        previous_end = end
    if len(run) >= MIN_SEED_WORDS:
        yield run_start, run_end, run, gaps


def _seed_runs(text: str, lowered: str) -> Iterator[SecretHit]:
    """Twelve or more wordlist words in a row, written the way seeds are (spaces, newlines,
    numbering), or said to be a seed, or carrying a valid BIP-39 checksum. A comma-separated
    list of common words ("love, hope, joy, ...") is only a list."""
    cue = any(word in lowered for word in _SEED_CUES)
    for start, end, run, gaps in _runs(lowered):
        listed = sum("," in gap or ";" in gap for gap in gaps) >= len(gaps) // 2
        checksummed = any(bip39_checksum_valid(run[i:i + n]) for n in (24, 21, 18, 15, 12)
                          for i in range(len(run) - n + 1))
        if not listed or cue or checksummed:
            yield SecretHit("seed_phrase", start, end)


def _named_seed(text: str, lowered: str) -> Iterator[SecretHit]:
    """ "my recovery phrase is ..." followed by six or more words, most of them BIP-39 words."""
    words = bip39_words()
    for match in _SEED_CONTEXT.finditer(text):
        tail = lowered[match.end():match.end() + 240]
        clause = re.split(r"[.!?\n](?:\s|$)", tail, maxsplit=1)[0]
        found = _WORD.findall(clause)
        if len(found) >= 6 and sum(w in words for w in found) >= 0.75 * len(found):
            yield SecretHit("seed_phrase", match.end(), match.end() + len(clause))
        elif (MIN_SEED_WORDS <= len(found) <= 30 and "," not in clause and _SEED_NAME.search(match.group())
              and sum(w in _SENTENCE_WORDS for w in found) <= 1):
            # Monero's and Electrum's wordlists are not BIP-39's: twelve or more words said to be
            # a seed that do not read as a sentence (no "the", "is", "you", ...) are one.
            yield SecretHit("seed_phrase", match.end(), match.end() + len(clause))


def find(text: str, lowered: str, longest_word: int) -> Iterator[SecretHit]:
    cue = any(cue in lowered for cue in _SEED_CUES)
    if text.count(" ") + text.count("\n") + text.count(",") >= (5 if cue else MIN_SEED_WORDS - 1):
        words = bip39_words()
        # Cheap count first (all in C): twelve wordlist words must at least be present somewhere.
        present = sum(map(words.__contains__, lowered.translate(_PUNCTUATION_TO_SPACE).split()))
        if present >= MIN_SEED_WORDS:
            yield from _seed_runs(text, lowered)
        if cue:
            yield from _named_seed(text, lowered)
    if longest_word >= 51:
        for match in _HEX_KEY.finditer(text):
            window = text[max(0, match.start() - 60):match.start()]
            if _HEX_CONTEXT.search(window):
                yield SecretHit("crypto_private_key", match.start(), match.end())
        for match in _WIF.finditer(text):
            if base58check_valid(match.group()):
                yield SecretHit("crypto_private_key", match.start(), match.end())
