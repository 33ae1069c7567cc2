"""Rules of the secret detector that the corpus alone does not pin down: checksums, what a
field name says, identifiers, placeholders, and which kind names a merged hit."""

from __future__ import annotations

import hashlib

import pytest
from secret_corpus import iban

from mnemic.core.safety import find_secrets, secret_fields
from mnemic.core.safety.names import Strength, name_strength
from mnemic.core.safety.values import is_placeholder
from mnemic.core.safety.wallets import bip39_checksum_valid


def test_bip39_checksums_follow_the_specification() -> None:
    assert bip39_checksum_valid(("abandon " * 11 + "about").split())
    assert bip39_checksum_valid("legal winner thank year wave sausage worth useful legal winner thank yellow".split())
    assert bip39_checksum_valid(("abandon " * 23 + "art").split())
    assert not bip39_checksum_valid(("abandon " * 12).split())


def test_a_seed_is_refused_however_it_is_written_but_a_word_list_is_not() -> None:
    seed = "legal winner thank year wave sausage worth useful legal winner thank yellow"
    assert find_secrets(seed)
    assert find_secrets(", ".join(seed.split()))  # a valid checksum says seed, commas or not
    assert find_secrets("my recovery phrase: " + ", ".join(["zoo"] * 12))
    assert not find_secrets("We need milk, bread, eggs, butter, cheese, apple, banana, orange, lemon, "
                            "sugar, salt, pepper.")


@pytest.mark.parametrize(("name", "strength"), [
    ("DB_PASSWORD", Strength.STRONG), ("clientSecret", Strength.STRONG), ("x-api-key", Strength.STRONG),
    ("AccountKey", Strength.STRONG), ("door code", Strength.STRONG), ("pw", Strength.STRONG),
    ("key", Strength.WEAK), ("pass", Strength.WEAK),
    ("token_type", Strength.NONE), ("max_tokens", Strength.NONE), ("public_key", Strength.NONE),
    ("primary key", Strength.NONE), ("password_min_length", Strength.NONE), ("zip code", Strength.NONE),
    ("access_key_id", Strength.NONE), ("passport", Strength.NONE),
])
def test_a_field_name_says_whether_its_value_is_a_credential(name: str, strength: Strength) -> None:
    assert name_strength(name) is strength


@pytest.mark.parametrize("value", ["<your-api-key>", "${API_KEY}", "sk-...", "xxxxxxxx", "changeme",
                                   "your-key-here", "{{ vault_password }}", "os.environ['KEY']",
                                   "sk_test_xxxxxxxxxxxxxxxxxxxxxxxx", "your_example_api_key_here"])
def test_placeholders_are_not_values(value: str) -> None:
    assert is_placeholder(value)


@pytest.mark.parametrize("value", ["hunter2", "Tr0ub4dor&3", "example123", "mysecretpassword", "1234",
                                   "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"])
def test_real_values_are_not_placeholders(value: str) -> None:
    assert not is_placeholder(value)


def test_an_id_may_look_random_but_may_not_be_a_credential() -> None:
    random_id = "sess_Q9x2LmP4vTz8KwR1bN7c"
    assert find_secrets(random_id)  # in a sentence it would be refused...
    assert secret_fields({"session_id": random_id}, identifiers=("session_id",)) == {}  # ...as an id it is one
    assert secret_fields({"session_id": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"},
                         identifiers=("session_id",)) == {"session_id": ["github_token"]}
    assert secret_fields({"metadata": {"db_password": "hunter2"}}) == {"metadata": ["password"]}


def test_a_named_rule_names_a_hit_the_randomness_rule_also_found() -> None:
    [hit] = find_secrets("OPENAI_API_KEY=sk-" + "HmvguTEKhCpqHKCn8TSCpqglNnhF6bQmBVeRL8f38u")
    assert hit.kind == "openai_key"


def test_admit_is_the_backstop_for_every_record_written() -> None:
    from datetime import datetime, timezone

    from mnemic import SecretRefusedError
    from mnemic.core.intake import Intake
    from mnemic.core.records import MemoryRecord, text_hash
    from mnemic.core.stats import WriteStats

    intake = Intake(namespace="default", stats=WriteStats(), max_text_chars=16_000)
    now = datetime.now(timezone.utc)
    clean = MemoryRecord(id="r1", text="Prefers tea.", hash=text_hash("Prefers tea."), user_id="alice",
                         namespace="default", created_at=now, updated_at=now,
                         metadata={"thread_id": "Q9x2LmP4vTz8KwR1bN7cAb"})
    intake.admit(clean)  # an id may look random
    with pytest.raises(SecretRefusedError, match="topic"):
        intake.admit(clean.model_copy(update={"topic": "pw: Tr0ub4dor&3"}))
    legacy = clean.model_copy(update={"text": "My password is hunter2"})
    intake.admit(legacy.model_copy(update={"state": "invalid"}), legacy)  # retiring it stays possible
    with pytest.raises(SecretRefusedError, match="text"):
        intake.admit(legacy, clean)


def test_store_values_under_id_keys_may_look_random() -> None:
    assert secret_fields({"data": {"id": "Q9x2LmP4vTz8KwR1bN7cAb", "orderRef": "Zx81kQ9vLm27Tq4WaB3c"}}) == {}
    assert secret_fields({"data": {"note": "Q9x2LmP4vTz8KwR1bN7cAb"}}) == {"data": ["high_entropy_token"]}
    assert secret_fields({"data": {"session_token": "Q9x2LmP4vTz8KwR1bN7cAb"}})


def test_hex_digests_in_prose_are_not_ibans_but_ibans_still_are() -> None:
    # Review ids of the LangGraph feedback step ("r" + a hex digest) once read as IBANs about
    # one time in 500, so a reviewer's rejection could not withdraw its lesson.
    for seen in ("rf04dbc387f32e1193f4fe62c", "rd66a5804e9485d696afce5be", "rd173b2b2e94f9445175a99ac"):
        assert find_secrets(f"rejected by reviewer alice in thread t9 (review {seen}), on an output") == []
    digests = ["r" + hashlib.sha256(str(i).encode()).hexdigest()[:24] for i in range(3000)]
    assert [d for d in digests if find_secrets(f"review {d} done")] == []
    assert [h.kind for h in find_secrets(f"wire it to {iban('DE', '370400440532013000').lower()}")] == ["iban"]
    # A country outside the registry this detector knows still counts when written as IBANs are.
    assert [h.kind for h in find_secrets(f"pay into {iban('LC', 'HEMM000100010012001200023015')}")] == ["iban"]


@pytest.mark.parametrize("text", [
    "My Netflix login is jane.doe@gmail.com / Sunflower#2024",
    "Spotify: mike88 / BassDrop!99",
    "log in with alice@corp.com and Spring#2025",
    "use passphrase 'correct horse battery staple' for the vault",
    "The password we agreed on is 'bananas-in-pajamas'",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "our key is AKIAIOSFODNN7EXAMPLE",
])
def test_credentials_given_as_a_pair_in_quotes_or_as_the_documentation_keys_are_refused(text: str) -> None:
    assert find_secrets(text), text


@pytest.mark.parametrize("text", [
    "We compared TCP / IP with QUIC.",
    "Targets for Q3 / FY24-Q1 are set.",
    "Write to alice@corp.com and Room-42 will be booked.",
    "The password field says 'Enter your password'.",
    "The password error is 'required'.",
    "Use the placeholder your_example_api_key_here in the docs.",
    "The passphrase should be 'long and memorable', say the docs.",
])
def test_pairs_quotes_and_examples_that_hold_no_credential_are_stored(text: str) -> None:
    assert not find_secrets(text), text


@pytest.mark.parametrize("text", ["The account number ends in 4242.", "The last four digits of my SSN are 1120.",
                                  "Her card ending with 4242 was declined."])
def test_the_last_digits_of_an_account_or_id_are_not_the_number(text: str) -> None:
    assert not find_secrets(text), text


@pytest.mark.parametrize("text", ["my account number is 12345678", "passport number X1234567"])
def test_a_whole_account_or_id_number_is_still_refused(text: str) -> None:
    assert find_secrets(text), text


@pytest.mark.parametrize("text", [
    "monero seed: sighting refer idiom unknown diet eluded ghetto damp leopard bakery muzzle fewest sedan "
    "sipped vane mystery icon gigantic eldest kidneys smog tasked dads dazed refer",
    "my electrum seed is: wild father tree among universe such mobile favorite target dynamic credit identify",
    "Garage code 1 2 3 4",
    "the code for the safe is 4-4-1-7",
    "code for the garage: 5512",
    "My password is my dog's name: Biscuit",
])
def test_seeds_of_other_wallets_codes_said_digit_by_digit_and_a_value_after_its_hint_are_refused(text: str) -> None:
    assert find_secrets(text), text


@pytest.mark.parametrize("text", [
    "The seed funding is: angel investors family friends accelerator grants loans crowdfunding revenue savings",
    "Seed: tomato, basil, mint, chives, dill, parsley, sage, thyme, oregano, lettuce, kale, spinach",
    "seed phrase: it is important that you never share it with anyone at all ever again",
    "my backup plan: swim bike run lift stretch rest eat sleep repeat walk hike climb",
    "The code for the door is broken.",
    "The code to the building is in the welcome email.",
    "Meeting room code 3 4 5 is free",
    "The pin code has 4 digits",
    "Password rules for the portal: strict.",
    "My password is my usual one: ask me",
])
def test_lists_plans_and_talk_about_codes_are_stored(text: str) -> None:
    assert not find_secrets(text), text


@pytest.mark.parametrize("text", [
    "the password to my laptop is my birthday 12/04/1988",
    "WLAN-Schlüssel: Sonnenblume2024",
    "la clé wifi est Soleil2024",
    "la clave del wifi es Gatito123",
    "account 000123456789 routing 021000021",
    "acct #: 4402-1193-88",
])
def test_a_dated_hint_wifi_keys_in_other_languages_and_a_bare_account_number_are_refused(text: str) -> None:
    assert find_secrets(text), text


@pytest.mark.parametrize("text", [
    "My password is the same as in 2019",
    "My password is my usual one from 2019.",
    "Der Schlüssel liegt unter der Matte.",
    "Account 2023 review",
    "account 2023-2024 budget",
    "The account has 12 345 678 followers",
])
def test_years_and_keys_under_the_mat_are_not_credentials(text: str) -> None:
    assert not find_secrets(text), text


@pytest.mark.parametrize("text", [
    "La clé wifi est sur le routeur.",
    "Das WLAN-Passwort ist auf dem Router.",
    "The passphrase 'four random words' is an example from the guide.",
    "Alarm code: ask the concierge.",
    "Gate code: see email",
])
def test_where_a_code_is_and_quoted_examples_are_not_credentials(text: str) -> None:
    assert not find_secrets(text), text


@pytest.mark.parametrize("text", ["Alarm code: 4471", "door_code=XK-99", "recovery_code: ABCD-EFGH-IJKL",
                                  "The password we agreed on is 'bananas-in-pajamas' as a backup"])
def test_codes_with_their_digits_and_quoted_passwords_are_still_refused(text: str) -> None:
    assert find_secrets(text), text
