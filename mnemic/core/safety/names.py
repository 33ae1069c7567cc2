"""Does a field name say it holds a credential? `DB_PASSWORD`, `clientSecret`, `x-api-key`,
`AccountKey` do; `token_type`, `max_tokens`, `public_key`, `primary key`, `password_min_length`
do not. Shared by the assignment rules (`NAME=value`) and metadata screening (`{"pin": "4821"}`).

A name is split into its words (snake, kebab, dotted and camel case) and judged by them, the way
detect-secrets' keyword plugin and gitleaks' generic-api-key rule do, with their allowlists'
lesson applied: the last word decides whether the value is the secret or something about it.
"""

from __future__ import annotations

import re
from enum import Enum
from functools import lru_cache


class Strength(Enum):
    NONE = 0
    WEAK = 1    # "key", "pass", "code": a credential only when the value looks like one
    STRONG = 2  # "password", "secret", "api_key": any real value is a credential


_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")

# Words that make a name a credential's name on their own.
_STRONG = frozenset(
    """password passwords passwd pwd pw passphrase passcode passwort kennwort contraseña contrasena
    senha wachtwoord motdepasse mdp secret secrets token apikey apitoken credential credentials creds
    privkey privatekey secretkey accesskey accesstoken authtoken refreshtoken clientsecret auth
    authorization signature sig salt pin otp cvv cvc cvv2 mnemonic seedphrase sessionid cookie
    xsrf csrf bearer jwt pat psk""".split()
)
# Words that, written before "key" (or "code"), make it a credential: api key, door code.
_KEY_QUALIFIERS = frozenset(
    """api access secret private priv auth encryption encrypt decryption signing sign master license
    licence account shared client app application service sas storage subscription webhook session
    consumer admin root bot deploy hmac jwt crypto wallet wifi wlan wpa wpa2 network router product
    serial activation registration recovery backup unlock vault x stripe openai anthropic aws azure
    gcp google github gitlab slack twilio sendgrid mapbox maps mailgun mailchimp algolia pusher
    firebase supabase datadog sentry heroku vercel netlify cloudflare door gate alarm garage lock
    safe entry keypad building security verification confirmation locker padlock mfa totp sms
    login combination bitlocker seed one time 2fa otp""".split()
)
# Words that, written before "key", make it an index or a public half: primary key, public key.
_NOT_SECRET_KEY = frozenset(
    """public pub publishable primary foreign sort partition hash cache idempotency object s3 map
    dict lookup row unique composite range shard routing index group dedup dedupe cluster music
    piano keyboard hot short long natural surrogate candidate composite join turkey monkey donkey
    whiskey hockey jockey""".split()
)
# When the name ends in one of these, the value describes the credential, it is not the credential.
_ABOUT = frozenset(
    """id ids name names type types url uri urls endpoint endpoints path paths file files filename dir
    length len size count counts limit limits min max minimum maximum policy policies format hint
    hints label labels field fields expiry expires expiration exp ttl lifetime age version versions
    algorithm algorithms alg mode enabled disabled required rotation header headers prefix env var
    vars variable location manager provider source sources ref refs arn index column input pattern
    regex validator validation strength timeout retries attempts changed updated at date time usage
    used user username login email question reset store storage vault scope scopes audience issuer
    fingerprint kid budget price cost rate rates generator length chars characters digits rule rules
    requirement requirements complexity reminder expired last status state flag check valid
    placeholder example sample host hostname port region server domain owner owners description desc
    comment comments note notes meta metadata info annotations tags""".split()
)
_PLURAL_COUNTS = frozenset({"tokens", "keys", "pins", "codes", "passes"})
_ARTICLES = frozenset({"the", "a", "an", "my", "your", "our", "his", "her", "their", "its", "this", "that", "new"})
_NOT_SECRET_FIRST = frozenset({"public", "publishable", "pub", "max", "num", "min", "total"})


# Field names repeat (every record of a list, every line of a config): each is judged once.
@lru_cache(maxsize=4096)
def name_strength(name: str) -> Strength:
    """How strongly `name` says its value is a credential."""
    words = [w.lower() for w in _WORDS.findall(name)]
    words = [w for w in words if w not in _ARTICLES]
    if not words:
        return Strength.NONE
    last = words[-1]
    if last in _ABOUT or last in _PLURAL_COUNTS or words[0] in _NOT_SECRET_FIRST:
        return Strength.NONE
    joined = "".join(words)
    if any(w in _STRONG for w in words) or joined in _STRONG or joined.endswith(("password", "passwd", "secret")):
        return Strength.STRONG
    before = set(words[:-1])
    if last in {"key", "pass", "combination", "combo"} or (last == "word" and "pass" in before):
        if before & _NOT_SECRET_KEY:
            return Strength.NONE
        return Strength.STRONG if before else Strength.WEAK
    if last in {"code", "phrase", "words", "answer"}:
        # "door code", "seed phrase", "security answer"; a bare "code" is a status, a zip, a promo.
        return Strength.STRONG if before & _KEY_QUALIFIERS else Strength.NONE
    return Strength.NONE


# A name/value entry gives its value the name it holds: Kubernetes' `{name: DB_PASSWORD, value: X}`,
# AWS tags and parameters (`Key`/`Value`, `ParameterKey`/`ParameterValue`), HAR headers, form fields,
# and any entry whose value half is keyed as what it holds (`data`, `content`, `text`, `secret`...).
_NAME_SLOTS = frozenset({"name", "key", "k", "parametername", "parameterkey", "variable", "var", "envvar", "field",
                         "fieldname", "label", "header", "headername", "setting", "option", "attribute", "attr",
                         "property", "prop", "param", "parameter", "secretname", "credentialname"})
_VALUE_SLOTS = frozenset({"value", "val", "v", "parametervalue", "fieldvalue", "headervalue", "settingvalue",
                          "optionvalue", "secretvalue", "stringvalue", "data", "content", "contents", "text",
                          "string", "str", "body", "payload", "secret", "secretstring", "plaintext", "raw"})
# A name such an entry holds: one identifier ("DB_PASSWORD", "x-api-key", "/prod/db/password"), or a
# short phrase whose last word names the credential ("API key", "wifi password"), not one whose
# credential word only qualifies what it names ("password reset guide" names a document).
_IDENTIFIER = re.compile(r"[A-Za-z_$/][\w.\-/:$]{0,80}")
_PHRASE = re.compile(r"[A-Za-z][\w\-]{0,30}(?: [A-Za-z][\w\-]{0,30}){1,3}")
_LAST_WORD_KEYS = frozenset({"key", "pass", "code", "phrase", "words", "answer", "combination", "combo"})


@lru_cache(maxsize=4096)
def pair_slot(key: str) -> str | None:
    """ "name" when `key` is the name half of a name/value entry, "value" for the value half."""
    last = key.strip("\"' ").rsplit(".", 1)[-1].lower().replace("_", "").replace("-", "")
    return "name" if last in _NAME_SLOTS else "value" if last in _VALUE_SLOTS else None


def pair_name(name: str) -> str | None:
    """`name` as the name of a credential its entry's value holds (its strength is not NONE), in a
    form the assignment rules read as one name; None when it names no credential."""
    bare = name.strip()
    if _PHRASE.fullmatch(bare):
        last = bare.rsplit(" ", 1)[-1]
        if name_strength(last) is Strength.NONE and last.lower() not in _LAST_WORD_KEYS:
            return None
    elif not _IDENTIFIER.fullmatch(bare):
        return None
    if name_strength(bare) is Strength.NONE:
        return None
    return re.sub(r"[^\w.\-]+", ".", bare).strip(".") or None


__all__ = ["Strength", "name_strength", "pair_name", "pair_slot"]
