"""Credentials written as data: `NAME=value` (.env, shell, INI, query strings), `name: value`
(YAML, headers, "pw: hunter2"), `"name": "value"` (JSON), `name => value`, `--password value`,
a name/value entry (`- name: DB_PASSWORD` / `value: X`, `{"Key": "api_key", "Value": "X"}`),
`<password>value</password>`, `Authorization: Bearer ...`, `curl -u user:pass`, and URLs that carry
a password (`redis://:pw@host`, `amqp://u:p@host`) or a token as their user part.

The name decides (see `names`), the value confirms (see `values`): a strong name with any real
value is a secret, a weak one ("key", "pass") only with a value that looks made up by a machine
or a person choosing a password.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .hits import SecretHit
from .names import Strength, name_strength, pair_name, pair_slot
from .values import QUOTES, describes_rather_than_gives, is_placeholder, looks_like_password, looks_like_token

# A name, an optional closing quote/bracket, then the operator. The name may be two words
# ("Secret Key: ...", "wifi password = ...").
_ASSIGNMENT = re.compile(
    r"(?P<name>(?:[A-Za-z][A-Za-z0-9]*[ \t](?=[A-Za-z]))?[A-Za-z_$](?:[A-Za-z0-9_.\-]|\[\d{1,6}\]){0,80})"
    r"(?P<close>[\"'\]]{0,2})[ \t]*(?P<op>:=|=>|->|==|=|:(?!//)|：)[ \t]*"
)
_FLAG = re.compile(r"(?<![\w\-])--?(?P<name>[A-Za-z][A-Za-z0-9_\-]{1,40})(?:=|[ \t]+)(?=[^\s\-])")
_XML_ELEMENT = re.compile(r"<(?P<name>[A-Za-z][\w.\-]{0,60})>(?P<value>[^<\s][^<\n]{0,200}?)</(?P=name)>")
_XML_KEY_VALUE = re.compile(
    r"""key=["'](?P<name>[^"'\n]{1,60})["']\s+value=["'](?P<value>[^"'\n]{1,300})["']""", re.IGNORECASE)
_URL_CREDENTIALS = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]{1,20})://(?P<user>[^\s:/@?#]*)(?::(?P<password>[^\s/@]*))?@"
    r"(?=[\w\[])"
)
_CURL_USER = re.compile(r"(?<![\w\-])(?:-u|--user)(?:=|[ \t]+)[\"']?(?P<user>[^\s\"':]+):(?P<password>[^\s\"']+)")
_AUTH_SCHEME = re.compile(
    r"(?<![\w\-])(?P<scheme>Bearer|Basic|Token|Bot|ApiKey|Api-Key|SSWS|OAuth|JWT|token|bearer|basic)"
    r"[ \t]+(?P<value>[A-Za-z0-9._~+/=\-]{8,})"
)
# Tools that take a password as a short flag: `mysql -pSECRET`, `sshpass -p pw`, `redis-cli -a pw`.
_TOOL_PASSWORD = re.compile(
    r"(?<![\w\-])(?:mysql\w*|mariadb\w*|sshpass|docker\s+login|podman\s+login|redis-cli|mongo\w*|psql|"
    r"htpasswd\s+-b\S*\s+\S+\s+\S+|smbclient|rdesktop|xfreerdp|ftp)\b[^\n]{0,80}?\s"
    r"(?:-p\s?|-a\s|--pass(?:word)?[= ]|/p:)(?P<value>\"[^\"\n]+\"|'[^'\n]+'|[^\s\"']+)"
)
# `auth=("user", "pw")` in Python HTTP clients.
_AUTH_TUPLE = re.compile(r"\bauth\s*=\s*\(\s*[\"'][^\"'\n]+[\"']\s*,\s*[\"'](?P<value>[^\"'\n]{3,})[\"']\s*\)")
# `aws configure set aws_secret_access_key X`, `git config --global x.token X`, `npm config set k X`
_CONFIG_SET = re.compile(
    r"\b(?:configure\s+set|config\s+set|config\s+--(?:global|local|system))\s+(?P<name>[\w.:/\-]+)\s+(?=\S)")
# `echo 'pw' | sudo -S ...`: a password piped into a prompt.
_PIPED_PASSWORD = re.compile(
    r"\becho\s+(?P<q>[\"']?)(?P<value>[^\s\"']{3,})(?P=q)\s*\|\s*(?:sudo\s+-S|passwd|chpasswd)")
_SCHEMES_IN_VALUE = frozenset({"bearer", "basic", "token", "bot", "apikey", "api-key", "ssws", "oauth", "jwt",
                               "key", "sso-key", "digest"})
_URL_PLACEHOLDERS = frozenset({"password", "pass", "passwd", "pwd", "pw", "secret", "pass123", "p", "x"})
_PAIR_TAIL = re.compile(r"[ \t]*[/|][ \t]*[^\s,;]+")
_VALUE_END = ",;)]}>"
_CODE_REFERENCE = re.compile(r"^(?:[A-Za-z_][\w.]*\(|[a-z_]\w*\.[a-z_][\w.]*$|[A-Z][A-Z0-9]*_[A-Z0-9_]+$)")
_PATH = re.compile(r"^(?:/|\./|\.\./|~/|[A-Za-z]:\\|\\\\)")


def _read_value(text: str, start: int) -> tuple[str, int, int] | None:
    """The value written at `start`: a quoted string, or the run of non-space characters
    (without trailing punctuation). Returns (value, start, end)."""
    if start < len(text) and text[start] == "@":
        start += 1
    if start >= len(text):
        return None
    opening = text[start]
    closing = QUOTES.get(opening)
    if closing is not None:
        end = text.find(closing, start + 1)
        newline = text.find("\n", start + 1)
        if end == -1 or (newline != -1 and newline < end):
            end = newline if newline != -1 else len(text)
        return text[start + 1:end], start + 1, end
    end = start
    while end < len(text) and not text[end].isspace() and text[end] not in "\"'`":
        end += 1
    raw = text[start:end]
    if raw.endswith(("...", "…")):
        return raw, start, end  # "sk-...": a prefix shown as an example, judged whole
    stripped = raw if raw.startswith(("<", "${", "{{")) else raw.rstrip(_VALUE_END + ".!?:")
    if not stripped:
        return None
    return stripped, start, start + len(stripped)


def _credential_value(value: str, after: str, strength: Strength, name: str) -> bool:
    bare = value.strip()
    if len(bare) < 3 or is_placeholder(bare):
        return False
    if bare.lower() == name.lower() or _CODE_REFERENCE.match(bare) or _PATH.match(bare):
        return False
    if bare.lower().startswith(("http://", "https://")) and "@" not in bare:
        return False
    if describes_rather_than_gives(bare.split()[0], after if " " not in bare else ""):
        return False
    if strength is Strength.WEAK:
        return looks_like_token(bare) or (looks_like_password(bare) and len(bare) >= 6)
    if _NUMERIC_NAME.search(name) and not any(ch.isdigit() for ch in bare):
        return False  # "Alarm code: ask the concierge": PINs, codes and combinations hold digits
    if bare.isdigit() and not _is_pin_like(name):
        return len(bare) >= 8  # "token: 4096" is a count; a numeric token is long
    return True


# Names of what is always digits: a card's PIN or CVV, a door's or a safe's code.
_NUMERIC_NAME = re.compile(
    r"(?i)(?:^|[\s_\-])(?:pin|cvv2?|cvc2?|csc)$|^(?:combination|combo)$|"
    r"(?:door|gate|alarm|garage|lock|safe|keypad|building|entry|house|lockbox|locker|padlock)[\s_\-]*"
    r"(?:code|pin|combination|combo)s?$"
)


def _kind_for(name: str) -> str:
    """ "password" for what a person chooses (passwords, PINs, codes), "credential" otherwise."""
    return "password" if _is_pin_like(name) else "credential"


def _is_pin_like(name: str) -> bool:
    lower = name.lower()
    return any(word in lower for word in ("pass", "pw", "pin", "code", "otp", "cvv", "cvc", "combination", "combo"))


def _assignment_hits(text: str) -> Iterator[SecretHit]:
    entries = _EntryHalves()  # pair_slot is cached: a gate on the slot words would cost more than it saves
    for match in _ASSIGNMENT.finditer(text):
        name = match.group("name")
        if (slot := pair_slot(name)) is not None:
            entries.add(text, match, slot)
        strength = name_strength(name)
        if strength is Strength.NONE:
            # "Secret Key" may have been read as "Key" alone after a miss on its first word.
            continue
        read = _read_value(text, match.end())
        if read is None:
            continue
        value, start, end = read
        if pair_slot(name) == "name" and pair_name(value) is not None:
            continue  # `"Key": "db_password"`: the name of what its entry holds, not a credential
        if match.group("op") == "=" and start > match.end("op") and value.isalpha() and value.islower() \
                and text[end:end + 1] == " ":
            continue  # "Set OPENAI_API_KEY= before running": a sentence goes on, no value was given
        if value.lower() in _SCHEMES_IN_VALUE or value.split(" ")[0].lower() in _SCHEMES_IN_VALUE:
            scheme_end = text.find(" ", start)
            nested = _read_value(text, scheme_end + 1) if scheme_end != -1 and scheme_end < end + 2 else None
            if nested is None:
                continue
            value, start, end = nested
        pair = _PAIR_TAIL.match(text, end)
        if pair is not None:
            end = pair.end()  # "creds: postgres / Pr0d-Db-2024": the pair is the credential
        if _credential_value(value, text[end:end + 24], strength, name):
            yield SecretHit(_kind_for(name), start, end)
    yield from entries.hits(text)


# What separates two entries, so that the name of one never names the value of the next: a brace or
# bracket (JSON), a new YAML list item, a blank line.
_ENTRY_BOUNDARY = re.compile(r"[{}\[\]]|\n[ \t]*-[ \t]|\n[ \t]*\n")


class _EntryHalves:
    """The halves of name/value entries written out (Kubernetes' `- name: DB_PASSWORD` then
    `value: X` in YAML, `{"name": "DB_PASSWORD", "value": "X"}` in JSON, `env[1].name: DB_PASSWORD`
    then `env[1].value: X` in flattened JSON): a value is read under the name its entry holds when
    the two sit in one entry (same path, nothing between them that closes an entry), in either order."""

    def __init__(self) -> None:
        self.names: list[tuple[int, int, str, str]] = []  # where the entry starts, ends, its path, the name
        self.values: list[tuple[int, int, str, tuple[str, int, int]]] = []

    def add(self, text: str, match: re.Match[str], slot: str) -> None:
        read = _read_value(text, match.end())
        if read is None:
            return
        written = match.group("name")
        path = written[:len(written) - len(written.rsplit(".", 1)[-1])].strip()
        if slot == "value":
            self.values.append((match.start(), read[2], path, read))
        elif (name := pair_name(read[0])) is not None:
            self.names.append((match.start(), read[2], path, name))

    def hits(self, text: str) -> Iterator[SecretHit]:
        for start, end, path, (value, value_start, value_end) in self.values:
            for name_start, name_end, name_path, name in self.names:
                if name_path != path:
                    continue
                gap = text[name_end:start] if name_end <= start else text[end:name_start] if end <= name_start else None
                if gap is None or len(gap) > 120 or gap.count("\n") > 2 or _ENTRY_BOUNDARY.search(gap):
                    continue
                if _credential_value(value, text[value_end:value_end + 24], name_strength(name), name):
                    yield SecretHit(_kind_for(name), value_start, value_end)
                break


def _flag_hits(text: str) -> Iterator[SecretHit]:
    for match in _FLAG.finditer(text):
        name = match.group("name")
        strength = name_strength(name)
        if strength is not Strength.STRONG:
            continue
        read = _read_value(text, match.end())
        if read is not None and _credential_value(read[0], text[read[2]:read[2] + 24], strength, name):
            yield SecretHit(_kind_for(name), read[1], read[2])


def _markup_hits(text: str) -> Iterator[SecretHit]:
    for pattern in (_XML_ELEMENT, _XML_KEY_VALUE):
        for match in pattern.finditer(text):
            name = match.group("name")
            strength = name_strength(name)
            value = match.group("value")
            if strength is not Strength.NONE and _credential_value(value, "", strength, name):
                yield SecretHit(_kind_for(name), match.start("value"), match.end("value"))


def _url_hits(text: str) -> Iterator[SecretHit]:
    for match in _URL_CREDENTIALS.finditer(text):
        user, password = match.group("user"), match.group("password")
        if password:
            if password.lower() not in _URL_PLACEHOLDERS and not is_placeholder(password):
                yield SecretHit("url_credentials", match.start("user"), match.end("password"))
        elif user and len(user) >= 16 and looks_like_token(user) and not is_placeholder(user):
            yield SecretHit("url_credentials", match.start("user"), match.end("user"))  # https://<token>@host
    for match in _CURL_USER.finditer(text):
        password = match.group("password")
        if password.lower() not in _URL_PLACEHOLDERS and not is_placeholder(password):
            yield SecretHit("credential", match.start("password"), match.end("password"))


def _code_hits(text: str) -> Iterator[SecretHit]:
    for match in _AUTH_TUPLE.finditer(text):
        if not is_placeholder(match.group("value")):
            yield SecretHit("password", match.start("value"), match.end("value"))
    for match in _CONFIG_SET.finditer(text):
        name = match.group("name")
        strength = name_strength(name)
        read = _read_value(text, match.end())
        if strength is not Strength.NONE and read is not None \
                and _credential_value(read[0], text[read[2]:read[2] + 24], strength, name):
            yield SecretHit(_kind_for(name), read[1], read[2])


def _tool_hits(text: str) -> Iterator[SecretHit]:
    for match in _PIPED_PASSWORD.finditer(text):
        if not is_placeholder(match.group("value")):
            yield SecretHit("password", match.start("value"), match.end("value"))
    for match in _TOOL_PASSWORD.finditer(text):
        value = match.group("value").strip("\"'")
        if len(value) >= 3 and not is_placeholder(value):
            yield SecretHit("credential", match.start("value"), match.end("value"))


def _auth_scheme_hits(text: str) -> Iterator[SecretHit]:
    for match in _AUTH_SCHEME.finditer(text):
        value = match.group("value").rstrip(".")
        scheme = match.group("scheme").lower()
        if is_placeholder(value):
            continue
        basic_credentials = scheme == "basic" and value.endswith("=")
        if looks_like_token(value) or basic_credentials or len(value) >= 20:
            yield SecretHit("authorization", match.start("value"), match.start("value") + len(value))


def find(text: str) -> Iterator[SecretHit]:
    has_operator = "=" in text or ":" in text or "：" in text
    if has_operator:
        yield from _assignment_hits(text)
    if "--" in text or " -" in text:
        yield from _flag_hits(text)
        yield from _tool_hits(text)
    if "<" in text:
        yield from _markup_hits(text)
    if "auth" in text or "config" in text:
        yield from _code_hits(text)
    if ("://" in text and "@" in text) or ("-u" in text and ":" in text):
        yield from _url_hits(text)
    lowered = text.lower()
    if "bearer" in lowered or "basic" in lowered or "token" in lowered or "bot " in lowered or "apikey" in lowered \
            or "api-key" in lowered or "ssws" in lowered or "oauth" in lowered or "jwt" in lowered:
        yield from _auth_scheme_hits(text)
