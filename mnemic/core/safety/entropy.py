"""The backstop for credentials no rule names: a long token that is random the way generated
keys are (upper and lower case and digits mixed, high Shannon entropy), standing on its own.

Left alone on purpose: hex strings (git SHAs, checksums, UUIDs: a bare hex secret is only found
next to its name), tokens inside URLs (document ids, paths) and identifiers made of words
(`getUserById2024Handler`). This mirrors detect-secrets' high-entropy plugins, tightened for
prose: they flag any long string in code; memory holds sentences.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .checksums import base58check_valid
from .hits import SecretHit
from .values import is_placeholder, shannon_entropy

MIN_LENGTH = 20
MIN_ENTROPY = 3.5
_CANDIDATE = re.compile(r"[A-Za-z0-9+/_\-=.~]{20,}")
_WORDISH = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{3,}(?![a-z])")
_HEX = re.compile(r"(?:0x)?[0-9a-fA-F\-]+")


def _random_looking(token: str) -> bool:
    core = token.strip("=._-~")
    if len(core) < MIN_LENGTH or _HEX.fullmatch(core):
        return False
    uppers = sum(ch.isupper() for ch in core)
    lowers = sum(ch.islower() for ch in core)
    digits = sum(ch.isdigit() for ch in core)
    if not (uppers and lowers and digits >= 2):
        return False
    if shannon_entropy(core) < MIN_ENTROPY:
        return False
    # Identifiers and file names are made of words; generated keys are not.
    covered = sum(len(m) for m in _WORDISH.findall(core))
    if covered >= 0.5 * len(core):
        return False
    return not is_placeholder(core)


_PUBLIC_KEY_TYPE = re.compile(
    r"(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-\S+|sk-ssh-\S+|sk-ecdsa-\S+|"
    r"(?i:pub(?:lic)?[_\- ]?key|publishable[_\- ]?key|public[_\- ]?cert(?:ificate)?)[\"']?\s*[:=]\s*[\"']?)\s*$")
_PUBLIC_PREFIXES = ("pk_live_", "pk_test_", "pk.eyJ")
_FINGERPRINTS = ("SHA256:", "SHA1:", "SHA512:", "MD5:")  # key fingerprints identify, they do not unlock


def _public(text: str, start: int, word: str) -> bool:
    """Public halves: an OpenSSH public key after its type, a publishable key, a Bitcoin address."""
    if word.startswith(_PUBLIC_PREFIXES) or word.upper().startswith(_FINGERPRINTS) \
            or _PUBLIC_KEY_TYPE.search(text, max(0, start - 40), start):
        return True
    return word[:1] in "13" and 26 <= len(word) <= 35 and base58check_valid(word)


def find(text: str) -> Iterator[SecretHit]:
    for word_match in re.finditer(r"\S{20,}", text):
        word = word_match.group()
        if "://" in word or word.startswith("www.") or "@" in word:
            continue  # URLs and addresses: their secrets are the URL rules' business
        if _public(text, word_match.start(), word.strip(".,;:!?()[]{}\"'")):
            continue
        for match in _CANDIDATE.finditer(word):
            if _random_looking(match.group()):
                start = word_match.start() + match.start()
                yield SecretHit("high_entropy_token", start, start + len(match.group()))
