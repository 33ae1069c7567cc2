"""What must never reach memory: secrets always, sensitive categories when the policy says so.

One module per job:
- `detector`: find and redact secrets, running the rule families below behind cheap gates;
- `vendors`: credentials with a vendor shape (API keys, tokens, webhooks, private key blocks);
- `assignments`: credentials written as data (`NAME=value`, YAML, JSON, headers, URLs with a password);
- `prose`: credentials said in a sentence ("my wifi password is ...", "the door code is 7731");
- `identity`: cards, IBANs and national ids, checked by checksum;
- `wallets`: seed phrases (BIP-39) and wallet private keys;
- `entropy`: long random tokens no other rule names;
- `disguise`: the same rules on the text folded (full-width, look-alikes, blank characters) or decoded;
- `invisible`: the characters that show nothing (dropped by `disguise`, refused in user ids);
- `structure`: what names a value in structured data beyond its own key (its entry, an ancestor);
- `names` and `values`: what makes a field name a credential's name, and a value a real one;
- `fields`: screening every free-text field of a write, not just its text, and redacting structured data;
- `sensitive`: the sensitive categories a policy may exclude.
"""

from .checksums import iban_valid, luhn_valid
from .detector import CUT_MARGIN, REDACTED, contains_secret, find_secrets, redact, redacted_prefix
from .fields import SecretRefusedError, redact_data, secret_fields
from .hits import SecretHit
from .invisible import shows_nothing
from .sensitive import SENSITIVE_CATEGORIES, sensitive_category
from .structure import MAX_NESTING, NestedTooDeeplyError, check_nesting

__all__ = [
    "CUT_MARGIN",
    "MAX_NESTING",
    "REDACTED",
    "SENSITIVE_CATEGORIES",
    "NestedTooDeeplyError",
    "SecretHit",
    "SecretRefusedError",
    "check_nesting",
    "contains_secret",
    "find_secrets",
    "iban_valid",
    "luhn_valid",
    "redact",
    "redact_data",
    "redacted_prefix",
    "secret_fields",
    "sensitive_category",
    "shows_nothing",
]
