"""Secrets never reach memory, on any path; sensitive categories stay out when the policy says so.

The corpus is built here, with real checksums (Luhn-valid cards and SINs, mod-97-valid IBANs), so
that a detector passing it is not just matching digit runs, and a list of look-alikes (order
numbers, phone numbers, dates, Luhn-invalid cards) must pass untouched.
"""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest
from scripted_llm import ScriptedLLM, fact, facts_json

from mnemic import Memory
from mnemic.core.embeddings import HashEmbedder
from mnemic.core.fences import unfenced
from mnemic.core.safety import (
    REDACTED,
    contains_secret,
    find_secrets,
    iban_valid,
    luhn_valid,
    redact,
    sensitive_category,
)

RNG = random.Random(20240611)
ALNUM = string.ascii_letters + string.digits


def token(length: int, alphabet: str = ALNUM) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(length))


def luhn_complete(prefix: str, length: int) -> str:
    body = prefix + "".join(RNG.choice(string.digits) for _ in range(length - len(prefix) - 1))
    for check in string.digits:
        if luhn_valid(body + check):
            return body + check
    raise AssertionError("unreachable")


def iban(country: str, bban: str) -> str:
    rearranged = bban + country + "00"
    number = int("".join(str(int(ch, 36)) for ch in rearranged))
    return f"{country}{98 - number % 97:02d}{bban}"


def grouped(value: str, size: int = 4, sep: str = " ") -> str:
    return sep.join(value[i:i + size] for i in range(0, len(value), size))


def build_corpus() -> list[tuple[str, str]]:
    """(kind, text) pairs: each text holds one secret, embedded in ordinary chat."""
    corpus: list[tuple[str, str]] = []
    cards = [("4", 16), ("4", 13), ("51", 16), ("55", 16), ("2221", 16), ("2720", 16), ("34", 15), ("37", 15),
             ("6011", 16), ("65", 16), ("36", 14), ("3528", 16), ("62", 19), ("4", 19)]
    card_templates = ["My card number is {}.", "Charge it to {} please", "use card {} exp 04/27",
                      "my visa: {}", "Card {} is the one I use for groceries."]
    for i, (prefix, length) in enumerate(cards):
        number = luhn_complete(prefix, length)
        shown = [number, grouped(number), grouped(number, sep="-")][i % 3]
        corpus.append(("card", card_templates[i % len(card_templates)].format(shown)))
    bbans = {"DE": "370400440532013000", "GB": "WEST12345698765432", "FR": "20041010050500013M02606",
             "NL": "ABNA0417164300", "ES": "21000418450200051332", "IT": "X0542811101000000123456",
             "BE": "539007547034", "CH": "00762011623852957", "AT": "1904300234573201",
             "PL": "109010140000071219812874", "SE": "50000000058398257466", "NO": "86011117947"}
    for i, (country, bban) in enumerate(bbans.items()):
        value = iban(country, bban)
        assert iban_valid(value)
        shown = grouped(value) if i % 2 else value
        corpus.append(("iban", f"Please send the refund to my IBAN {shown} thanks" if i % 3 else
                       f"my bank account is {shown.lower() if i == 3 else shown}"))
    for _ in range(8):
        ssn = f"{RNG.randint(1, 665):03d}-{RNG.randint(1, 99):02d}-{RNG.randint(1, 9999):04d}"
        corpus.append(("ssn", RNG.choice(["My SSN is {}.", "social security {}", "ssn: {}",
                                          "For the form, {} is my number"]).format(ssn)))
    corpus.append(("ssn", f"my social security number is {RNG.randint(100000000, 665999999)}"))
    corpus.append(("ssn", "SSN 219 09 9999 on file"))
    for nino in ("AB123456C", "JG 10 37 75 A", "NX 11 22 33 D"):
        corpus.append(("national_id", f"My NI number is {nino}."))
    for _ in range(3):
        sin = luhn_complete("1", 9)
        corpus.append(("national_id", f"Canadian SIN {sin[:3]}-{sin[3:6]}-{sin[6:]}"))
    corpus += [
        ("national_id", "My passport number is X1234567 and it expires next year."),
        ("national_id", "passport no. 533380006 for the booking"),
        ("national_id", "Driver's license number D1234-56789-01234"),
        ("national_id", "my aadhaar number is 2345 6789 0123"),
        ("national_id", "Tax ID: 12-3456789"),
        ("national_id", "My personnummer is 19900101-1234"),
        ("national_id", "DNI 12345678Z"),
        ("national_id", "my national insurance number: QQ123456C"),
        ("national_id", "codice fiscale RSSMRA85T10A562S"),
        ("national_id", "My bank account number is 12345678, sort code 12-34-56"),
    ]
    keys = [
        ("openai", "sk-proj-" + token(48)), ("openai", "sk-" + token(48)),
        ("anthropic", "sk-ant-api03-" + token(80, ALNUM + "-_")),
        ("aws", "AKIA" + token(16, string.ascii_uppercase + string.digits)),
        ("aws", "ASIA" + token(16, string.ascii_uppercase + string.digits)),
        ("github", "ghp_" + token(36)), ("github", "gho_" + token(36)), ("github", "github_pat_" + token(60)),
        ("gitlab", "glpat-" + token(20)), ("slack", "xoxb-" + token(12, string.digits) + "-" + token(24)),
        ("slack", "https://hooks.slack.com/services/T0000/B0000/" + token(24)),
        ("stripe", "sk_live_" + token(24)), ("stripe", "rk_test_" + token(24)),
        ("google", "AIza" + token(35, ALNUM + "_-")), ("google", "ya29." + token(60, ALNUM + "_-")),
        ("huggingface", "hf_" + token(34)), ("npm", "npm_" + token(36)), ("pypi", "pypi-" + token(60)),
        ("sendgrid", "SG." + token(22) + "." + token(43)), ("twilio", "SK" + token(32, "0123456789abcdef")),
        ("mailgun", "key-" + token(32)), ("groq", "gsk_" + token(52)), ("replicate", "r8_" + token(37)),
        ("digitalocean", "dop_v1_" + token(64, "0123456789abcdef")),
        ("shopify", "shpat_" + token(32, "0123456789abcdef")), ("databricks", "dapi" + token(32, "0123456789abcdef")),
        ("telegram", f"{RNG.randint(10**8, 10**9)}:" + token(35)),
        ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + token(43, ALNUM + "_-")),
        ("azure", "AccountKey=" + token(64, ALNUM + "+/") + "=="),
    ]
    key_templates = ["my API key is {}", "Here's the key: {} - keep it handy", "export OPENAI_API_KEY={}",
                     "use {} for the staging account", "token {} expires friday"]
    for i, (kind, value) in enumerate(keys):
        corpus.append((kind, key_templates[i % len(key_templates)].format(value)))
    corpus += [
        ("bearer", "curl -H 'Authorization: Bearer " + token(40) + "' https://api.example.com"),
        ("url", "the db is postgres://admin:" + token(12) + "@db.internal:5432/app"),
        ("url", "connect with mongodb+srv://app:" + token(16) + "@cluster0.example.net"),
        ("generic", "api_key = " + token(32)), ("generic", "client_secret: " + token(40)),
        ("generic", "my access token is " + token(8) + "42" + token(10)),
        ("generic", "The webhook secret is whsec_" + token(32)),
        ("private_key", "-----BEGIN RSA PRIVATE KEY-----\n" + token(64) + "\n-----END RSA PRIVATE KEY-----"),
        ("private_key", "here it is -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA" + token(40)),
        ("private_key", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE" + token(40) + "\n-----END EC PRIVATE KEY-----"),
        ("private_key", "-----BEGIN PRIVATE KEY-----\n" + token(80) + "\n-----END PRIVATE KEY-----"),
    ]
    corpus += [
        ("password", "My password is hunter2"),
        ("password", "the wifi password is " + token(10)),
        ("password", "pwd: " + token(9)),
        ("password", "My PIN is 4821."),
        ("password", "I set my password to correcthorse99"),
        ("password", "use Tr0ub4dor&3 as the password"),
        ("password", "The passcode for the alarm is 9911"),
        ("password", "my netflix password is " + token(12) + " lol"),
        ("password", "Password: " + token(14)),
        ("password", "the code for the door pin code is 7731"),
        ("password", "my passphrase is correct horse battery staple"),
        ("password", "Remember that my password for the bank is " + token(10)),
        ("password", "my one-time code is 493021"),
    ]
    return corpus


CORPUS = build_corpus()
SECRET_TEXTS = [text for _, text in CORPUS]

NOT_SECRETS = [
    "Order #A-10293 shipped yesterday.",
    "My order number is 58213977.",
    "Order number 1234567812345678 was delayed.",  # 16 digits, but no card prefix
    "Tracking number 1Z999AA10123456784.",
    "Call me at +1 512-555-0199.",
    "My flight is UA 1234 on 2024-05-01 at 10:30.",
    "The invoice total was $1,299.99.",
    "We upgraded to version 2.4.1 last week.",
    "The ISBN is 978-3-16-148410-0.",
    "My zip code is 78701.",
    "I forgot my password again.",
    "The password must be at least 12 characters.",
    "My password is not working.",
    "Room 404 on the 3rd floor.",
    "4111 1111 1111 1112 is a Luhn-invalid test number.",
    "My employee ID is E-4412.",
    "I was born in 1989.",
    "Ticket ABC-12345 is about the login page.",
    "I prefer replies in bullet points.",
    "The secret to good bread is time.",
    "My token of appreciation was a card.",
]


def test_the_corpus_is_large_and_varied() -> None:
    assert len(CORPUS) >= 100
    assert len({kind for kind, _ in CORPUS}) >= 20


@pytest.mark.parametrize(("kind", "text"), CORPUS, ids=[f"{i}-{k}" for i, (k, _) in enumerate(CORPUS)])
def test_every_corpus_secret_is_detected_and_redacted(kind: str, text: str) -> None:
    assert find_secrets(text), f"missed a {kind}: {text!r}"
    redacted, hits = redact(text)
    assert hits and REDACTED in redacted
    assert not contains_secret(redacted)


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_look_alikes_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


def test_checksums() -> None:
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert iban_valid("DE89 3704 0044 0532 0130 00") and not iban_valid("DE89 3704 0044 0532 0130 01")
    assert iban_valid("GB82WEST12345698765432") and not iban_valid("GB82WEST1234569876543")


def test_zero_secrets_stored_through_remember(memory: Memory) -> None:
    for text in SECRET_TEXTS:
        assert memory.remember(text, user_id="alice") is None
    assert memory.list(user_id="alice", include_invalid=True, include_expired=True) == []
    assert memory.stats.secrets_refused >= len(SECRET_TEXTS)
    assert sum(memory.stats.secrets_by_kind.values()) == memory.stats.secrets_refused


def test_zero_secrets_stored_through_remember_many(memory: Memory) -> None:
    ids = memory.remember_many([*SECRET_TEXTS, "Prefers replies in bullet points."], user_id="alice")
    memory.drain_writes()
    assert len(ids) == 1
    assert [r.text for r in memory.list(user_id="alice", include_invalid=True)] == [
        "Prefers replies in bullet points."]


def _stored_texts(memory: Memory, user_id: str) -> list[str]:
    return [r.text for r in memory.list(user_id=user_id, include_invalid=True, include_expired=True)]


def _assert_no_secret_in(texts: list[str]) -> None:
    joined = "\n".join(texts)
    for text in texts:
        assert not contains_secret(text), text
    for _, source in CORPUS:
        for hit in find_secrets(source):
            assert source[hit.start:hit.end] not in joined


def test_zero_secrets_stored_through_observe(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto") as mem:
        for i, text in enumerate(SECRET_TEXTS):
            mem.observe([{"role": "user", "content": f"I live in Austin. {text}"},
                         {"role": "assistant", "content": f"Got it, you said: {text}"}],
                        user_id="alice", session_id="s", turn=i)
        mem.drain_writes()
        texts = _stored_texts(mem, "alice")
        _assert_no_secret_in(texts)
        assert all(REDACTED not in t for t in texts)
        assert "Lives in Austin." in texts  # the rest of each turn still counts
        assert mem.stats.secrets_refused >= len(SECRET_TEXTS)


def test_zero_secrets_reach_the_llm_or_memory_on_the_llm_path(tmp_path: Path) -> None:
    leaked = SECRET_TEXTS[:40]
    # A model that echoes secrets back (as if it had seen them) must still store none.
    llm = ScriptedLLM(default=facts_json(*(fact(t) for t in leaked), fact("Lives in Austin.", topic="personal_info")))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as mem:
        for text in SECRET_TEXTS:
            mem.observe([{"role": "user", "content": text}], user_id="alice")
        mem.drain_writes()
        texts = _stored_texts(mem, "alice")
        _assert_no_secret_in(texts)
        assert texts == ["Lives in Austin."]
    for prompt in llm.prompts:
        said = unfenced(prompt.split("Conversation turn:")[-1])  # each message as the model is shown it
        assert said and not any(contains_secret(text) for _, text in said)


def test_zero_secrets_stored_through_memorize(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder()) as mem:
        stored = mem.memorize(user_id="alice", messages=[{"role": "user", "content": t} for t in SECRET_TEXTS])
        _assert_no_secret_in([r.text for r in stored])
        _assert_no_secret_in(_stored_texts(mem, "alice"))


def test_look_alikes_are_stored(memory: Memory) -> None:
    for text in NOT_SECRETS:
        assert memory.remember(text, user_id="alice") is not None, text
    assert memory.stats.secrets_refused == 0


def test_refusals_are_logged_without_the_secret(memory: Memory, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="mnemic"):
        memory.remember("My password is hunter2", user_id="alice")
    assert "password" in caplog.text and "hunter2" not in caplog.text


# -- sensitive categories ----------------------------------------------------------------------

SENSITIVE = [
    ("health", "I was diagnosed with type 2 diabetes last spring."),
    ("health", "I see a therapist for my anxiety every Tuesday."),
    ("religion", "I am a practising Catholic and go to church on Sundays."),
    ("politics", "I voted for the Green Party in the last election."),
    ("sexuality", "I am bisexual."),
    ("trade_union", "I am a union member at the plant."),
    ("criminal_record", "I was arrested in 2015."),
]


@pytest.mark.parametrize(("category", "text"), SENSITIVE)
def test_sensitive_categories_are_recognised(category: str, text: str) -> None:
    assert sensitive_category(text) == category


@pytest.mark.parametrize("text", ["I disabled notifications.", "I use std::vector a lot.",
                                  "I prefer replies in bullet points.", "I moved to Austin last year."])
def test_ordinary_facts_are_not_sensitive(text: str) -> None:
    assert sensitive_category(text) is None


def test_exclude_sensitive_keeps_categories_out_of_extraction(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto") as mem:
        for _, text in SENSITIVE:
            mem.observe([{"role": "user", "content": f"{text} I prefer tea."}], user_id="alice")
        mem.drain_writes()
        assert [r.text for r in mem.list(user_id="alice")] == ["Prefers tea."]
        assert mem.stats.sensitive_refused == len(SENSITIVE)
        assert set(mem.stats.sensitive_by_category) == {c for c, _ in SENSITIVE}


def test_exclude_sensitive_off_lets_them_in(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=HashEmbedder(),
                policy={"mode": "auto", "exclude_sensitive": False}) as mem:
        mem.observe([{"role": "user", "content": "I was diagnosed with type 2 diabetes last spring."}],
                    user_id="alice")
        mem.drain_writes()
        assert [r.text for r in mem.list(user_id="alice")] == ["Was diagnosed with type 2 diabetes last spring."]


def test_exclude_sensitive_covers_the_remember_tool_not_deliberate_writes(memory: Memory) -> None:
    assert memory.remember("I see a therapist every Tuesday.", user_id="alice",
                           source_kind="remember_tool") is None
    assert memory.stats.sensitive_refused == 1
    # An operator (or application code) writing deliberately stores it as written.
    assert memory.remember("Sees a therapist every Tuesday.", user_id="alice", author="operator",
                           source_kind="operator") is not None


def test_exclude_sensitive_applies_to_llm_extraction(tmp_path: Path) -> None:
    llm = ScriptedLLM(facts_json(fact("Has type 2 diabetes.", topic="personal_info"),
                                 fact("Prefers tea.", topic="preferences")))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as mem:
        mem.observe([{"role": "user", "content": "I have type 2 diabetes and I prefer tea."}], user_id="alice")
        mem.drain_writes()
        assert [r.text for r in mem.list(user_id="alice")] == ["Prefers tea."]
    assert "Never record health" in llm.prompts[0]


def test_text_cut_to_a_limit_keeps_no_part_of_a_key_the_cut_goes_through() -> None:
    # Cut first, then redacted: a key straddling the cut left a prefix no rule knows (up to 19
    # characters of a GitHub token), which went to the model distilling lessons and into them.
    from mnemic.core.safety import redacted_prefix
    from mnemic.flows import distil

    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    for cut in range(6, 24):
        feedback = "Please add sources. " * 400
        feedback = feedback[:8_000 - cut] + " " + key + " and cite them."
        assert key[:6] not in redacted_prefix(feedback, 8_000), cut
        llm = ScriptedLLM(default='{"lessons": ["Cite sources."], "rejected": false}')
        distil(llm, feedback, "Draft.", step="writer/draft")
        assert key[:6] not in llm.prompts[0], cut


def test_a_long_message_is_redacted_before_it_is_cut_to_the_limit(tmp_path: Path) -> None:
    # A message was cut to 8,000 characters before its secrets were redacted: a key straddling
    # the cut reached the extractor as a prefix no rule knows.
    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    llm = ScriptedLLM(default=facts_json())
    with Memory(tmp_path / "m", embedder=HashEmbedder(), policy="auto", llm=llm) as mem:
        for cut in (8, 14, 19):
            text = ("I live in Austin. " * 500)[:8_000 - cut] + " " + key
            mem.observe([{"role": "user", "content": text}], user_id="alice")
        mem.drain_writes()
    assert len(llm.prompts) == 3 and not any(key[:6] in prompt for prompt in llm.prompts)
