"""What must never reach memory: secrets always, sensitive categories when the policy says so.

Detection is deliberately biased towards refusing: a false positive costs one fact, a false
negative stores a credential. Numbers are checked with their own checksums (Luhn for cards and
Canadian SINs, mod-97 for IBANs) so that order numbers, dates and phone numbers pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

REDACTED = "[redacted secret]"


@dataclass(frozen=True)
class SecretHit:
    kind: str
    start: int
    end: int


# -- checksums ---------------------------------------------------------------------------------


def luhn_valid(digits: str) -> bool:
    if not digits.isdigit() or len(digits) < 2:
        return False
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def iban_valid(candidate: str) -> bool:
    iban = candidate.replace(" ", "").upper()
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{11,30}", iban):
        return False
    expected = IBAN_LENGTHS.get(iban[:2])
    if expected is not None and len(iban) != expected:
        return False
    rearranged = iban[4:] + iban[:4]
    number = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(number) % 97 == 1


IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
    "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24,
    "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21,
    "HU": 28, "IE": 22, "IL": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LI": 21,
    "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30,
    "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SE": 24, "SI": 19, "SK": 24, "SM": 27, "TN": 24, "TR": 26, "UA": 29, "VG": 24, "XK": 20,
}

# -- patterns ----------------------------------------------------------------------------------

# Provider credentials with a recognisable shape. Each is specific enough to need no context.
_PROVIDER_KEYS: tuple[tuple[str, str], ...] = (
    ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai_key", r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}"),
    ("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b"),
    ("github_token", r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    ("github_token", r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    ("gitlab_token", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("google_oauth_token", r"\bya29\.[0-9A-Za-z_\-]{20,}"),
    ("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("pypi_token", r"\bpypi-[A-Za-z0-9_\-]{50,}"),
    ("sendgrid_key", r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    ("twilio_key", r"\bSK[0-9a-fA-F]{32}\b"),
    ("mailgun_key", r"\bkey-[0-9a-zA-Z]{32}\b"),
    ("groq_key", r"\bgsk_[A-Za-z0-9]{40,}"),
    ("replicate_token", r"\br8_[A-Za-z0-9]{30,}"),
    ("digitalocean_token", r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    ("shopify_token", r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b"),
    ("databricks_token", r"\bdapi[a-f0-9]{32}\b"),
    ("telegram_bot_token", r"\b\d{8,10}:[A-Za-z0-9_\-]{35}\b"),
    ("discord_token", r"\b[MNO][A-Za-z\d_\-]{23,27}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("azure_key", r"(?i)\b(?:AccountKey|SharedAccessKey)=[A-Za-z0-9+/=]{30,}"),
    ("bearer_token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{16,}"),
    ("url_credentials", r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,15}://[^/\s:@]{1,64}:[^/\s@]{1,128}@[^\s]+"),
)

_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
    r"(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)

# "api_key = ...", "my token is ...": a named credential followed by a token-shaped value.
_ASSIGNED_SECRET = re.compile(
    r"(?i)\b(?:api[ _\-]?key|apikey|secret[ _\-]?key|access[ _\-]?key|access[ _\-]?token|auth[ _\-]?token|"
    r"refresh[ _\-]?token|client[ _\-]?secret|private[ _\-]?key|secret|token|session[ _\-]?(?:id|key|cookie)|"
    r"webhook[ _\-]?secret|signing[ _\-]?key|encryption[ _\-]?key|license[ _\-]?key|recovery[ _\-]?(?:code|key))"
    r"s?\b(?:\s+(?:for|to|on|of)\s+[\w .@\-]{1,40}?)?\s*(?:is|was|are|=|:|->)\s*[\"'`]?"
    r"(?P<value>[A-Za-z0-9_\-./+=~]{12,})"
)

# Passwords are secrets at any length: "my password is hunter2".
_STATED_PASSWORD = re.compile(
    r"(?i)\b(?:password|passwd|pwd|passcode|passphrase|pass\s?word|pin(?:\s+(?:code|number))?|"
    r"security\s+(?:code|answer)|cvv|cvc|one[ \-]time\s+code|otp|2fa\s+code|mfa\s+code|backup\s+code)s?\b"
    r"(?:\s+(?:for|to|on|of|at)\s+(?:my\s+|the\s+)?[\w .@\-]{1,40}?)?"
    r"\s*(?:is|was|are|=|:|->|will\s+be|would\s+be)\s*[\"'`“]?(?!\[redacted)(?P<value>[^\s\"'`”]{3,})"
)
_PASSWORD_SET_TO = re.compile(
    r"(?i)\b(?:set|changed?|reset|updated?)\s+(?:my|the|our)\s+(?:\w+\s+)?(?:password|passcode|pin|passphrase)"
    r"\s+(?:to|as)\s+[\"'`“]?(?!\[redacted)(?P<value>[^\s\"'`”]{3,})"
)
_USE_AS_PASSWORD = re.compile(
    r"(?i)\b(?:use|using|used)\s+[\"'`“]?(?!\[redacted)(?P<value>[^\s\"'`”]{3,})[\"'`”]?\s+as\s+(?:my|the|our)\s+"
    r"(?:\w+\s+)?(?:password|passcode|pin|passphrase)\b"
)
# Words that follow "password is" without being one.
_NOT_A_VALUE = frozenset(
    """a an the not too very wrong incorrect invalid expired required missing same different
    weak strong long short secure insecure stored saved changed reset set needed forgotten lost new old
    being still already case sensitive managed hidden encrypted hashed protected empty blank my your our
    their his her its in on at for of to from with that this there here ok okay fine stolen compromised
    leaked safe unsafe easy hard simple complex complicated""".split()
)

_CARD = re.compile(r"(?<![\w.])(?:\d[ \-]?){12,18}\d(?![\w])")
_US_SSN = re.compile(r"(?<![\w\-])(?!000|666|9\d\d)\d{3}([\- ])(?!00)\d{2}\1(?!0000)\d{4}(?![\w\-])")
_UK_NINO = re.compile(
    r"\b(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b"
)
_SIN = re.compile(r"(?<![\w\-])\d{3}([\- ])\d{3}\1\d{3}(?![\w\-])")
_IBAN_START = re.compile(r"(?i)\b[A-Z]{2}\d{2}(?=[ ]?[A-Z0-9])")

# Identity numbers named by their context: "my passport number is X1234567".
_ID_CONTEXT = re.compile(
    r"(?i)\b(?:ssn|social\s+security(?:\s+number|\s+no\.?|\s+#)?|sin|social\s+insurance\s+number|"
    r"national\s+(?:id|identity|identification|insurance)(?:\s+(?:card\s+)?(?:number|no\.?|#))?|ni\s+number|nino|"
    r"passport(?:\s+(?:number|no\.?|#))?|driver'?s?\s+licen[cs]e(?:\s+(?:number|no\.?|#))?|"
    r"driving\s+licen[cs]e(?:\s+(?:number|no\.?|#))?|tax\s+(?:id|identification\s+number|file\s+number|number)|"
    r"tin|itin|ein|aadhaa?r(?:\s+(?:number|no\.?|#))?|pan(?:\s+(?:card|number))+|nhs\s+number|"
    r"medicare\s+number|health\s+insurance\s+number|personnummer|bsn|dni|nie|nif|codice\s+fiscale|cpf|curp|rut|"
    r"steuer[\- ]?id|steuernummer|id\s+(?:card\s+)?(?:number|no\.?|#)|identity\s+(?:card\s+)?number|"
    r"personal\s+(?:id|identity|identification)\s+number|citizen\s+(?:id|number)|voter\s+id|"
    r"residence\s+permit\s+number|green\s+card\s+number|alien\s+(?:registration\s+)?number|"
    r"(?:bank\s+)?account\s+(?:number|no\.?|#)|routing\s+number|sort\s+code|bsb)\b"
    r"[^\n\d]{0,24}?(?<![A-Za-z0-9])"
    r"(?P<value>[A-Z0-9][A-Z0-9.\-/]*\d[A-Z0-9.\-/]*(?:[ ][A-Z0-9.\-/]*\d[A-Z0-9.\-/]*){0,4})"
)


def _compiled() -> list[tuple[str, re.Pattern[str]]]:
    return [(kind, re.compile(pattern)) for kind, pattern in _PROVIDER_KEYS]


_PROVIDER_PATTERNS = _compiled()


def _value_looks_like_token(value: str) -> bool:
    letters = sum(ch.isalpha() for ch in value)
    digits = sum(ch.isdigit() for ch in value)
    if len(value) >= 24 and letters and (digits or any(ch in "_-+/=" for ch in value)):
        return True
    # Short values must mix letters and digits: "secret is something" is not a credential.
    return letters > 0 and digits > 0


def _iban_hits(text: str) -> Iterable[SecretHit]:
    for match in _IBAN_START.finditer(text):
        start = match.start()
        chars: list[str] = []
        ends: list[int] = []
        pos = start
        # Gather up to 34 alphanumerics, allowing single spaces between groups.
        while pos < len(text) and len(chars) < 34:
            ch = text[pos]
            if ch.isalnum() and ch.isascii():
                chars.append(ch.upper())
                ends.append(pos + 1)
            elif not (ch == " " and pos + 1 < len(text) and text[pos + 1].isalnum()):
                break
            pos += 1
        country = "".join(chars[:2])
        lengths = [IBAN_LENGTHS[country]] if country in IBAN_LENGTHS else list(range(15, 35))
        for length in lengths:
            if length <= len(chars) and iban_valid("".join(chars[:length])):
                end = ends[length - 1]
                if end < len(text) and text[end].isalnum():
                    continue
                yield SecretHit("iban", start, end)
                break


def find_secrets(text: str) -> list[SecretHit]:
    """Every secret found in `text`, by kind and position (overlaps merged, in order)."""
    if not text:
        return []
    hits: list[SecretHit] = []
    for match in _PRIVATE_KEY.finditer(text):
        hits.append(SecretHit("private_key", match.start(), match.end()))
    for kind, pattern in _PROVIDER_PATTERNS:
        for match in pattern.finditer(text):
            hits.append(SecretHit(kind, match.start(), match.end()))
    for match in _ASSIGNED_SECRET.finditer(text):
        value = match.group("value")
        if _value_looks_like_token(value):
            hits.append(SecretHit("credential", match.start("value"), match.end("value")))
    for pattern in (_STATED_PASSWORD, _PASSWORD_SET_TO, _USE_AS_PASSWORD):
        for match in pattern.finditer(text):
            value = match.group("value").rstrip(".,;:!?)")
            if value.lower() in _NOT_A_VALUE or not value:
                continue
            hits.append(SecretHit("password", match.start("value"), match.start("value") + len(value)))
    for match in _CARD.finditer(text):
        digits = re.sub(r"[ \-]", "", match.group())
        if 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_valid(digits):
            hits.append(SecretHit("payment_card", match.start(), match.end()))
    hits.extend(_iban_hits(text))
    for match in _US_SSN.finditer(text):
        hits.append(SecretHit("national_id", match.start(), match.end()))
    for match in _SIN.finditer(text):
        if luhn_valid(re.sub(r"\D", "", match.group())):
            hits.append(SecretHit("national_id", match.start(), match.end()))
    for match in _UK_NINO.finditer(text):
        hits.append(SecretHit("national_id", match.start(), match.end()))
    for match in _ID_CONTEXT.finditer(text):
        value = match.group("value").rstrip(" .-/")
        if sum(ch.isdigit() for ch in value) >= 4:
            start = match.start("value")
            hits.append(SecretHit("national_id", start, start + len(value)))
    return _merge(hits)


def _merge(hits: list[SecretHit]) -> list[SecretHit]:
    if not hits:
        return []
    hits.sort(key=lambda h: (h.start, -(h.end - h.start)))
    merged = [hits[0]]
    for hit in hits[1:]:
        last = merged[-1]
        if hit.start < last.end:
            if hit.end > last.end:
                merged[-1] = SecretHit(last.kind, last.start, hit.end)
            continue
        merged.append(hit)
    return merged


def contains_secret(text: str) -> bool:
    return bool(find_secrets(text))


def redact(text: str, hits: list[SecretHit] | None = None) -> tuple[str, list[SecretHit]]:
    """`text` with every secret replaced by a marker, and the hits that were replaced."""
    found = find_secrets(text) if hits is None else hits
    if not found:
        return text, []
    parts: list[str] = []
    cursor = 0
    for hit in found:
        parts.append(text[cursor:hit.start])
        parts.append(REDACTED)
        cursor = hit.end
    parts.append(text[cursor:])
    return "".join(parts), found


# -- sensitive categories ----------------------------------------------------------------------

_SENSITIVE: dict[str, str] = {
    "health": r"""
        diagnos\w* | symptom\w* | medicat\w* | prescri(?:bed|ption)\w* | pregnan\w* | miscarriage |
        therap(?:y|ist|ies) | psychiatr\w* | psychologist | counsell?(?:ing|or) | depress(?:ed|ion) |
        anxiety | panic\s+attacks? | disorder | syndrome | cancer | tumou?r | chemo\w* | diabet\w* |
        asthma | allerg(?:y|ies|ic) | hiv | hepatitis | covid | infection | surgery | surgeon |
        illness | disease | chronic\s+(?:pain|illness|fatigue|condition) | mental\s+health | adhd |
        autis\w* | bipolar | schizophren\w* |
        ptsd | ocd | migraines? | epilep\w* | seizures? | insulin | dialysis | blood\s+pressure |
        cholesterol | heart\s+(?:attack|condition|disease) | had\s+a\s+stroke | arthritis | dementia | alzheimer\w* |
        parkinson\w* | disabilit(?:y|ies) | wheelchair | addict(?:ed|ion) | alcoholi\w* |
        rehab | sober | sobriety | overdose | antidepressants? | ssri | ozempic | wegovy | ivf |
        infertil\w* | hospitali[sz]ed | in\s+hospital | my\s+doctor | diagnosis | injur(?:y|ies|ed) |
        eating\s+disorder | anorexi\w* | bulimi\w* | suicid\w* | self[\s\-]harm | obes(?:e|ity) |
        herpes | hearing\s+aids? | medical\s+condition | health\s+condition | sick\s+leave
    """,
    "religion": r"""
        religio\w* | christian\w* | catholic\w* | protestant\w* | evangelical | muslim\w* | islam\w* |
        jewish | judaism | jew | hindu\w* | buddhis\w* | sikh\w* | mormon\w* | atheis\w* | agnostic |
        church | mosque | synagogue | pray(?:s|ed|ing|er|ers)? | bible | qur'?an | koran | torah |
        ramadan | kosher | halal | baptis\w* | jehovah\w* | lutheran | methodist | pagan | wicca\w* |
        spiritual\w* | god-fearing | my\s+faith | born\s+again | bar\s+mitzvah | bat\s+mitzvah
    """,
    "politics": r"""
        politic\w* | democrats? | republicans? | liberal\s+party | conservative\s+party | labou?r\s+party |
        tory | tories | socialis\w* | communis\w* | libertarian\w* | anarchis\w* | fascis\w* |
        vot(?:e|ed|es|ing)\s+(?:for|against|labou?r|tory|democrat|republican|green|conservative|liberal) |
        (?:left|right)[\s\-]wing | trump | biden | maga | green\s+party | party\s+member\w* |
        election\s+campaign | campaign(?:ed|ing)?\s+for | political\s+views? | progressive\s+politics
    """,
    "sexuality": r"""
        gay | lesbian\w* | bisexual\w* | homosexual\w* | heterosexual\w* | queer | transgender\w* |
        trans\s+(?:man|woman|person) | non[\s\-]?binary | asexual\w* | pansexual\w* | lgbt\w* |
        sexual\s+orientation | sexuality | sex\s+life | came\s+out\s+as | coming\s+out\s+as | intersex
    """,
    "ethnicity": r"""
        ethnicity | ethnic\s+(?:origin|background|group) | my\s+race | racial\s+(?:background|identity) |
        skin\s+colou?r
    """,
    "trade_union": r"""
        trade\s+union | labou?r\s+union | union\s+member\w* | unioni[sz]ed | shop\s+steward
    """,
    "criminal_record": r"""
        convicted | conviction | felony | felon | criminal\s+record | arrested | prison | jail |
        parole | probation | incarcerat\w* | sex\s+offender | pleaded\s+guilty
    """,
    "genetic_biometric": r"""
        genetic\w* | dna\s+test\w* | genome | biometric\w* | brca\w*
    """,
    "immigration_status": r"""
        undocumented | asylum | refugee\s+status | immigration\s+status | visa\s+overstay | deport\w*
    """,
}

_SENSITIVE_PATTERNS = {
    category: re.compile(r"(?ix)\b(?:" + body + r")\b") for category, body in _SENSITIVE.items()
}
SENSITIVE_CATEGORIES: tuple[str, ...] = tuple(_SENSITIVE)


def sensitive_category(text: str) -> str | None:
    """The first sensitive category `text` touches (health, religion, politics, ...), or None."""
    for category, pattern in _SENSITIVE_PATTERNS.items():
        if pattern.search(text):
            return category
    return None


__all__ = [
    "REDACTED",
    "SENSITIVE_CATEGORIES",
    "SecretHit",
    "contains_secret",
    "find_secrets",
    "iban_valid",
    "luhn_valid",
    "redact",
    "sensitive_category",
]
