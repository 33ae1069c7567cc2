"""A corpus of secrets and of look-alikes for the safety tests.

Every secret is generated here (seeded, so runs repeat) in the shapes people and programs write
them: chat sentences in many phrasings and languages, .env / YAML / JSON / INI / shell / curl
snippets, headers, connection strings, webhook URLs, key blocks, wallet seeds. Numbers carry real
checksums (Luhn, mod-97, Base58Check), so a detector passing them is not matching digit runs.

Look-alikes are what memory must keep: talk about passwords, placeholders, public identifiers
(UUIDs, SHAs, addresses, tracking numbers), URLs without credentials.
"""

from __future__ import annotations

import hashlib
import random
import string
from importlib import resources
from pathlib import Path

from mnemic.core.safety import iban_valid, luhn_valid

RNG = random.Random(20261201)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def token(length: int, alphabet: str = ALNUM) -> str:
    while True:
        value = "".join(RNG.choice(alphabet) for _ in range(length))
        # Generated keys have digits and both cases; make sure each sample does.
        if alphabet not in (ALNUM, B64, URLSAFE) or (
                any(c.isdigit() for c in value) and any(c.isupper() for c in value)
                and any(c.islower() for c in value)):
            return value


def password() -> str:
    words = ["Sunflower", "maple", "Tiger", "river", "Falcon", "copper", "Orchid", "nimbus"]
    return RNG.choice(words) + RNG.choice(["!", "#", "@", "_", ""]) + str(RNG.randint(10, 9999))


def luhn_complete(prefix: str, length: int) -> str:
    body = prefix + "".join(RNG.choice(string.digits) for _ in range(length - len(prefix) - 1))
    return next(body + check for check in string.digits if luhn_valid(body + check))


def iban(country: str, bban: str) -> str:
    number = int("".join(str(int(ch, 36)) for ch in bban + country + "00"))
    value = f"{country}{98 - number % 97:02d}{bban}"
    assert iban_valid(value)
    return value


def base58check(payload: bytes) -> str:
    raw = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    number = int.from_bytes(raw, "big")
    out = ""
    while number:
        number, rest = divmod(number, 58)
        out = BASE58[rest] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


def seed_words(count: int) -> list[str]:
    words = resources.files("mnemic.core.safety").joinpath("bip39_english.txt").read_text().split()
    return [RNG.choice(words) for _ in range(count)]


def grouped(value: str, size: int = 4, sep: str = " ") -> str:
    return sep.join(value[i:i + size] for i in range(0, len(value), size))


def build_secrets() -> list[tuple[str, str]]:
    """(kind, text) pairs; each text holds at least one secret."""
    s: list[tuple[str, str]] = []
    add = s.append
    # -- AI providers
    add(("openai_key", f"my OpenAI key is sk-proj-{token(56, URLSAFE)}"))
    add(("openai_key", f"OPENAI_API_KEY=sk-{token(48)}"))
    add(("openai_key", f"use sk-svcacct-{token(60, URLSAFE)} for the batch jobs"))
    add(("anthropic_key", f"ANTHROPIC_API_KEY: sk-ant-api03-{token(93, URLSAFE)}AA"))
    add(("anthropic_key", f"here's the claude key sk-ant-api03-{token(80, URLSAFE)} don't share it"))
    add(("huggingface_token", f"HF token: hf_{token(34)}"))
    add(("huggingface_token", f"huggingface-cli login --token hf_{token(34)}"))
    add(("groq_key", f"GROQ_API_KEY='gsk_{token(52)}'"))
    # -- cloud
    aws_id = "AKIA" + token(16, string.ascii_uppercase + "234567")
    aws_secret = token(40, B64)
    add(("aws_access_key", f"The access key id is {aws_id} for the deploy user."))
    add(("aws_secret_key", f"aws_secret_access_key = {aws_secret}"))
    add(("aws_secret_key", f"AWS creds: {aws_id} / {token(40, B64)}"))
    add(("aws_secret_key", f"my AWS secret access key is {token(40, B64)}"))
    add(("aws_secret_key", f"[default]\naws_access_key_id = {aws_id}\naws_secret_access_key = {token(40, B64)}"))
    add(("aws_session_token", f"export AWS_SESSION_TOKEN=\"{token(300, B64)}\""))
    add(("azure_storage_key", "DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey="
                              f"{token(86, B64)}==;EndpointSuffix=core.windows.net"))
    add(("azure_sas", "https://acme.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r"
                      f"&se=2026-01-01T00:00:00Z&spr=https&sig={token(30, ALNUM)}%2B{token(10)}%3D"))
    add(("azure_sas", f"the SAS token is sv=2021-06-08&ss=bfqt&srt=sco&sp=rwdlacupx&sig={token(43, ALNUM)}%3D"))
    add(("azure_ad_client_secret", f"client secret for the app registration: {token(3)}8Q~{token(34, URLSAFE)}"))
    add(("azure_ad_client_secret", f"AZURE_CLIENT_SECRET={token(3)}7Q~{token(31, URLSAFE)}"))
    add(("google_oauth_secret", f"Google OAuth client secret GOCSPX-{token(28, URLSAFE)}"))
    add(("google_oauth_secret", f'{{"web": {{"client_id": "1234.apps.googleusercontent.com", '
                                f'"client_secret": "GOCSPX-{token(28, URLSAFE)}"}}}}'))
    add(("google_api_key", f"Maps key AIza{token(35, URLSAFE)} restricted to our domain"))
    add(("google_oauth_token", f"access token ya29.{token(120, URLSAFE)}"))
    add(("gcp_service_account", '{"type": "service_account", "private_key_id": "' + token(40, HEX)
         + '", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC' + token(60, B64)
         + '\\n-----END PRIVATE KEY-----\\n"}'))
    add(("digitalocean_token", f"DIGITALOCEAN_TOKEN=dop_v1_{token(64, HEX)}"))
    add(("vault_token", f"VAULT_TOKEN=hvs.{token(90, URLSAFE)}"))
    add(("databricks_token", f"databricks token dapi{token(32, HEX)}"))
    # -- code hosting and packages
    add(("github_token", f"git clone https://ghp_{token(36)}@github.com/acme/private.git"))
    add(("github_token", f"my github PAT: github_pat_{token(22)}_{token(59)}"))
    add(("github_token", f"GH_TOKEN=gho_{token(36)}"))
    add(("gitlab_token", f"GitLab token glpat-{token(20, URLSAFE)}"))
    add(("gitlab_token", f"CI uses glrt-{token(20, URLSAFE)} as the runner token"))
    add(("npm_token", f"//registry.npmjs.org/:_authToken=npm_{token(36)}"))
    add(("npm_token", f"the npm publish token is npm_{token(36)}"))
    add(("pypi_token", f"[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc{token(70, URLSAFE)}"))
    add(("pypi_token", f"twine upload -u __token__ -p pypi-AgEIcHlwaS5vcmc{token(60, URLSAFE)} dist/*"))
    # -- payments
    add(("stripe_key", f"a live Stripe key: sk_live_{token(24)}"))
    add(("stripe_key", f"STRIPE_SECRET_KEY=rk_live_{token(99)}"))
    add(("stripe_webhook_secret", f"webhook signing secret whsec_{token(32)}"))
    add(("square_token", f"square access token sq0atp-{token(22, URLSAFE)}"))
    add(("shopify_token", f"SHOPIFY_ACCESS_TOKEN=shpat_{token(32, HEX)}"))
    # -- messaging
    add(("slack_token", f"slack bot token xoxb-{token(12, string.digits)}-{token(13, string.digits)}-{token(24)}"))
    add(("slack_token", f"SLACK_USER_TOKEN=xoxp-{token(11, string.digits)}-{token(11, string.digits)}-"
                        f"{token(12, string.digits)}-{token(32, HEX)}"))
    add(("slack_webhook", f"post alerts to https://hooks.slack.com/services/T{token(8, string.ascii_uppercase)}/"
                          f"B{token(10, string.ascii_uppercase)}/{token(24)}"))
    add(("discord_webhook", f"the discord webhook is https://discord.com/api/webhooks/{token(18, string.digits)}/"
                            f"{token(68, URLSAFE)}"))
    add(("discord_webhook", f"https://discordapp.com/api/webhooks/{token(19, string.digits)}/{token(68, URLSAFE)}"))
    add(("discord_bot_token", f"DISCORD_TOKEN=MT{token(24)}.{token(6, URLSAFE)}.{token(38, URLSAFE)}"))
    add(("teams_webhook", "https://acme.webhook.office.com/webhookb2/" + token(8, HEX) + "-1234-5678-9abc-"
         + token(12, HEX) + "@" + token(8, HEX) + "-aaaa-bbbb-cccc-" + token(12, HEX) + "/IncomingWebhook/"
         + token(32, HEX) + "/" + token(8, HEX) + "-dddd-eeee-ffff-" + token(12, HEX)))
    add(("telegram_bot_token", f"bot token {RNG.randint(10**8, 10**9)}:AA{token(33, URLSAFE)}"))
    add(("twilio_key", f"Twilio API key SK{token(32, HEX)} and secret {token(32)}"))
    add(("twilio_auth_token", f"TWILIO_AUTH_TOKEN={token(32, HEX)}"))
    add(("twilio_auth_token", f"twilio auth token is {token(32, HEX)}"))
    add(("sendgrid_key", f"SENDGRID_API_KEY=SG.{token(22, URLSAFE)}.{token(43, URLSAFE)}"))
    add(("sendgrid_key", f"sendgrid: SG.{token(22, URLSAFE)}.{token(43, URLSAFE)}"))
    add(("mailgun_key", f"mailgun api key key-{token(32, HEX)}"))
    add(("mailchimp_key", f"MAILCHIMP_KEY={token(32, HEX)}-us14"))
    # -- tokens and headers
    add(("jwt", "session cookie eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0MiIsIm5hbWUiOiJBbGljZSJ9."
                + token(43, URLSAFE)))
    add(("bearer", f"curl -H \"Authorization: Bearer {token(40, URLSAFE)}\" https://api.acme.io/v1/me"))
    add(("bearer", f"Authorization: Bearer {token(32, HEX)}"))
    add(("bearer", f"the header was authorization: bearer {token(28)}"))
    add(("basic_auth", "Authorization: Basic YWRtaW46" + token(16, B64) + "=="))
    add(("basic_auth", f"curl -u admin:{password()} https://jenkins.acme.io/api/json"))
    add(("token_auth", f"Authorization: Token {token(40, HEX)}"))
    add(("token_auth", f"headers = {{'X-API-Key': '{token(32)}'}}"))
    add(("token_auth", f"x-auth-token: {token(36, HEX)}"))
    add(("cookie", f"Cookie: sessionid={token(32, string.ascii_lowercase + string.digits)}; csrftoken={token(32)}"))
    # -- URLs with credentials
    add(("url_credentials", f"DATABASE_URL=postgres://app:{password()}@db.internal:5432/app"))
    add(("url_credentials", f"redis://:{token(24)}@cache.internal:6379/0"))
    add(("url_credentials", f"broker is amqp://guest:{password()}@rabbit.acme.io:5672/"))
    add(("url_credentials", f"mongodb+srv://reporting:{token(16)}@cluster0.ab1cd.mongodb.net/prod"))
    add(("url_credentials", f"mysql://root:{password()}@10.0.0.5/shop"))
    add(("url_credentials", f"ftp://deploy:{password()}@ftp.acme.io/site"))
    add(("url_credentials", f"smtp://mailer%40acme.io:{token(16)}@smtp.gmail.com:587"))
    add(("url_credentials", f"the proxy is http://alice:{password()}@proxy.corp:3128"))
    # -- config files
    add(("env_assignment", f"DB_PASSWORD={password()}"))
    add(("env_assignment", f"export SECRET_KEY='{token(50, ALNUM + '!@#$%^&*(-_=+)')}'"))
    add(("env_assignment", f"JWT_SECRET={token(32)}"))
    add(("env_assignment", f"SMTP_PASS={password()}"))
    django_key = token(50, string.ascii_lowercase + "0123456789!@#$%^&*")
    add(("env_assignment", f"django SECRET_KEY = \"django-insecure-{django_key}\""))
    add(("yaml_assignment", f"database:\n  host: db.internal\n  user: app\n  password: {password()}\n"))
    add(("yaml_assignment", f"redis:\n  auth_token: \"{token(32)}\""))
    add(("yaml_assignment", f"apiVersion: v1\nkind: Secret\ndata:\n  password: {token(16, B64)}=="))
    add(("json_assignment", f'{{"username": "svc-report", "password": "{password()}"}}'))
    add(("json_assignment", f'{{"apiKey":"{token(32)}","region":"eu-west-1"}}'))
    add(("ini_assignment", f"[database]\nhost = db.internal\npasswd = {password()}"))
    add(("ini_assignment", f"[smtp]\nPassword={password()}"))
    add(("xml_assignment", f'<add key="ClearTextPassword" value="{password()}" />'))
    add(("xml_assignment", f"<password>{password()}</password>"))
    add(("cli_flag", f"mysql -u root -p{password()} shop"))
    add(("cli_flag", f"psql --password={password()} -h db.internal"))
    add(("cli_flag", f"sshpass -p '{password()}' ssh deploy@10.0.0.7"))
    add(("cli_flag", f"docker login -u acme -p {password()} registry.acme.io"))
    add(("netrc", f"machine api.heroku.com login me@acme.io password {token(36, HEX)}"))
    # -- passwords said in prose
    for text in [
        "My password is hunter2",
        "my password's {p}",
        "The password for the router is {p}.",
        "pw: {p}",
        "PW - {p}",
        "the pass is {p}",
        "the wifi password is {p}",
        "wifi key is {p}",
        "WiFi: network BlueFish, password {p}",
        "I set my password to {p} yesterday",
        "I changed my netflix password to {p}",
        "use {p} as the password",
        "{p} is my password for the bank",
        "Remember: my gmail password = {p}",
        "password → {p}",
        "the admin password is still {p}",
        "my email pwd is {p}",
        "login: alice@acme.io, password: {p}",
        "user admin pass {p}",
        "credentials are admin/{p}",
        "new password: \u201c{p}\u201d",
        "My laptop password is sunshine",
        "my passphrase is correct horse battery staple",
        "the passphrase is 'purple monkey dishwasher rocket'",
        "The alarm code is 4471.",
        "door code 2580#",
        "the gate code to the building is 1934",
        "My PIN is 8830.",
        "my debit card pin is 0519",
        "PIN: 7264",
        "the combination to the safe is 12-34-56",
        "cvv 482",
        "card 4111 1111 1111 1111 exp 09/28 cvv 381",
        "my one-time code is 493021",
        "the 2FA backup code is 8f4k-29dm",
        "security answer: Fluffy2009",
        "Mein Passwort ist {p}",
        "mot de passe : {p}",
        "mi contraseña es {p}",
        "a senha do wifi é {p}",
        "我的密码是{p}",
        "パスワード：{p}",
        "wachtwoord: {p}",
        "Password:{p}",
        "PASSWORD = {p}",
        "the VPN password hasn't changed, it's still {p}",
        "the password is now {p} after the reset",
        "hey, wifi pw is {p} btw",
        "my password is {w}",
    ]:
        add(("password_prose", text.format(p=password(), w=RNG.choice(["pineapple", "bluebird", "Mittens"]))))
    # -- named credentials in prose
    add(("named_credential", f"our datadog api key is {token(32, HEX)}"))
    add(("named_credential", f"the webhook secret for prod: {token(40)}"))
    add(("named_credential", f"Heroku API key {token(8, HEX)}-{token(4, HEX)}-{token(4, HEX)}-{token(4, HEX)}-"
                             f"{token(12, HEX)} is in the vault? no, here it is"))
    add(("named_credential", f"license key: {token(5, string.ascii_uppercase + string.digits)}-"
                             f"{token(5, string.ascii_uppercase + string.digits)}-"
                             f"{token(5, string.ascii_uppercase + string.digits)}-"
                             f"{token(5, string.ascii_uppercase + string.digits)}"))
    add(("named_credential", f"recovery codes: {token(4, 'abcdefghjkmnpqrstuvwxyz23456789')}-"
                             f"{token(4, 'abcdefghjkmnpqrstuvwxyz23456789')} "
                             f"{token(4, 'abcdefghjkmnpqrstuvwxyz23456789')}-"
                             f"{token(4, 'abcdefghjkmnpqrstuvwxyz23456789')}"))
    add(("high_entropy", f"here you go: {token(40, B64)}"))
    add(("high_entropy", f"the key for staging {token(32)} (rotate monthly)"))
    # -- private keys
    add(("private_key", f"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA{token(64, B64)}\n"
                        "-----END RSA PRIVATE KEY-----"))
    add(("private_key", f"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA{token(60, B64)}\n"))
    add(("private_key", f"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI{token(60, B64)}\n-----END EC PRIVATE KEY-----"))
    add(("private_key", f"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0w{token(60, B64)}"))
    add(("private_key", f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF{token(60, B64)}\n"
                        "-----END PGP PRIVATE KEY BLOCK-----"))
    add(("private_key", f"age key AGE-SECRET-KEY-1{token(58, 'QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L')}"))
    # -- crypto wallets
    add(("seed_phrase", " ".join(seed_words(12))))
    add(("seed_phrase", "my seed phrase is " + " ".join(seed_words(24))))
    add(("seed_phrase", "Recovery phrase: " + ", ".join(seed_words(12))))
    add(("seed_phrase", "\n".join(f"{i + 1}. {w}" for i, w in enumerate(seed_words(12)))))
    add(("seed_phrase", "metamask words: " + " ".join(w.upper() for w in seed_words(12))))
    add(("seed_phrase", "wallet backup - " + " ".join(seed_words(18)) + " - keep offline"))
    add(("eth_private_key", f"ETH private key 0x{token(64, HEX)}"))
    add(("eth_private_key", f"PRIVATE_KEY={token(64, HEX)}"))
    add(("eth_private_key", f"import this into metamask: {token(64, HEX)}"))
    wif = base58check(b"\x80" + RNG.randbytes(32) + b"\x01")
    add(("wif_key", f"bitcoin key {wif}"))
    add(("wif_key", base58check(b"\x80" + RNG.randbytes(32))))
    add(("xprv", f"xprv9s21ZrQH143K{token(95, BASE58)}"))
    add(("solana_key", f"solana private key: {token(88, BASE58)}"))
    # -- cards, bank accounts, ids
    for prefix, length, sep in [("4", 16, " "), ("51", 16, "-"), ("37", 15, " "), ("6011", 16, "."),
                                ("2221", 16, ""), ("4", 16, "."), ("35", 16, " "), ("36", 14, "-")]:
        number = luhn_complete(prefix, length)
        shown = grouped(number, sep=sep) if sep else number
        add(("payment_card", RNG.choice(["card number {}", "charge {} please", "my visa is {}",
                                          "Pay with {} exp 11/27"]).format(shown)))
    add(("iban", f"IBAN: {grouped(iban('DE', '370400440532013000'))}"))
    add(("iban", f"wire it to {iban('GB', 'WEST12345698765432')}"))
    add(("iban", f"mon IBAN est {grouped(iban('FR', '20041010050500013M02606'))}"))
    add(("ssn", "My SSN is 219-09-9999."))
    add(("ssn", "social security number 078 05 1120"))
    add(("national_id", "passport number X1234567"))
    add(("national_id", "My NI number is QQ 12 34 56 C."))
    return s


# Phrasings written apart from the generator above (as a held-out set would be): chat, config and
# shell lines in many languages. Their kinds are the generator's; here they count as one more.
PHRASED = [
"The Wi-Fi password at the cabin is Pinecone!88",
"wifi: HomeNet / pass: sunflower2020",
"My password is Blue-Elephant-42, don't tell anyone",
"FYI my pw is qwerty123",
"Note to self: bank password = Rosebud#1",
"my apple id password is MyDogMax2015",
"The new password for the shared drive is 'Winter2024!'",
"Login for the staging site: admin / S3cure!Pass",
"username: jdoe password: Xy7#kLm2",
"My passcode is 246810",
"Gate code: 4512#",
"The garage code is 8-3-1-9",
"The lockbox combo is 2-4-6-8",
"My ATM PIN is 5531",
"The PIN for my SIM card is 0000",
"pin number 7742",
"Remember that the alarm disarm code is 1357",
"My Netflix login is me@mail.com with password Chillax99",
"Use password hunter42 for the test account",
"Password for the VPN: Correct-Horse-7",
"passwd: toor",
"root password is toor",
"The router admin password was changed to Adm1n!234",
"My laptop's password is now sunshine99",
"here's my github token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
"OPENAI_API_KEY=sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr678Stu901",
"anthropic key: sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012345-AA",
"stripe sk_live_51HqLyjWDarjtT1zdp7dcXYZ123abc",
"aws_access_key_id=AKIAIOSFODNN7ABCDEFG aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzzzKEY12",
"AWS secret: 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",
"Here is the service account JSON: {\"type\":\"service_account\",\"private_key\":\"-----BEGIN PRIVATE KEY-----\\nMIIEv...\"}",
"ssh key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
"Slack webhook: https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX1a",
"discord webhook https://discord.com/api/webhooks/123456789012345678/abcDEF_ghiJKL-mnoPQRstuVWXyz0123456789abcdefGHIJKLmnopQRSTuvwx",
"Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyMTIzIn0.c2lnbmF0dXJl",
"curl -H 'Authorization: token 0123456789abcdef0123456789abcdef01234567' https://api.github.com/user",
"Basic auth header: Authorization: Basic YWxpY2U6cGFzc3dvcmQxMjM=",
"postgresql://admin:P4ssw0rd!@prod-db.company.com:5432/main",
"redis://default:Rg7xQ2mL9pZ4@redis-12345.cloud.redislabs.com:12345",
"amqps://user:Secr3tPwd@broker.example.org/vhost",
"mongodb://root:example123@localhost:27017",
"https://user:hunter2@example.com/private",
"ftp://anonymous:guest123@ftp.example.org",
"DATABASE_PASSWORD: 'Tz9#pQ2!'",
"db_pass = \"letmein2023\"",
"SECRET_KEY=9f8e7d6c5b4a39281706f5e4d3c2b1a0",
"client_secret: 7Hx~Kp2Lm9Qr4Ts6Vw8Yz0Ab3Cd5Ef7Gh",
"Azure storage connection string: DefaultEndpointsProtocol=https;AccountName=mystore;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net",
"sas: ?sv=2020-08-04&ss=bfqt&srt=sco&sp=rwdlacupx&se=2030-01-01T00:00:00Z&st=2021-01-01T00:00:00Z&spr=https&sig=AbCdEfGh1234567890IjKlMnOpQrStUvWx%3D",
"GOCSPX-AbCdEfGhIjKlMnOpQrStUvWxYz12",
"Twilio: account SID AC0123456789abcdef0123456789abcdef auth token 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
"SendGrid key SG.abcdefghijklmnopqrstuv.ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq",
"npm token npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
"pypi token pypi-AgEIcHlwaS5vcmcCJGRmZjM0YzAxLWZhNjctNDg1ZS1hNjFjLTFkZGNmMzYwYjQ5NAACKlszLCJhYmMiXQ",
"gitlab glpat-AbCdEfGhIjKlMnOpQrSt",
"hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh",
"xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
"My card is 4532 0151 1283 0366, exp 12/26",
"Visa 4532-0151-1283-0366",
"card: 4532.0151.1283.0366",
"Amex 3782 822463 10005",
"cc 5555555555554444",
"my cvv is 737",
"CVC: 123",
"IBAN GB82 WEST 1234 5698 7654 32",
"SSN 123-45-6789",
"my social is 123 45 6789",
"seed: abandon ability able about above absent absorb abstract absurd abuse access accident",
"zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo wrong",
"Ledger recovery words: legal winner thank year wave sausage worth useful legal winner thank yellow",
"private key 0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
"Bitcoin WIF: 5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ",
"my MetaMask secret recovery phrase is: candy maple cake sugar pudding cream honey rich smooth crumble sweet treat",
"The API key for weather service: 3f2a9c8b7d6e5f4a3b2c1d0e9f8a7b6c",
"heroku api key: 01234567-89ab-cdef-0123-456789abcdef",
"token=ghu_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
"X-API-KEY: a1b2c3d4e5f6g7h8i9j0",
"export GITHUB_TOKEN=github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd",
"[client]\nuser=root\npassword=Sup3rS3cret",
"spring.datasource.password=Hibernate#2024",
"<password>MyXmlPass1</password>",
"\"password\":\"qwerty!234\"",
"kubectl create secret generic db --from-literal=password=Kube$ecret9",
"docker run -e POSTGRES_PASSWORD=mysecretpassword postgres",
"echo 'hunter2' | sudo -S apt update",
"mysql -uroot -pRootPass123",
"The door to the server room opens with 9021",
"Le mot de passe du wifi est Soleil2024",
"Das Passwort lautet Sommer2024!",
"La contraseña es Gato#123",
"パスワードはsakura2024です",
"密码：abc12345",
"Пароль: Moskva2024",
"my 2fa backup codes are 1234-5678, 2345-6789, 3456-7890",
"verification code 482913",
"Your Google verification code is G-482913",
"The safe combination is 36-24-12",
"my secret answer is fluffy",
"pw=changeme123",
"I use the same password everywhere: Tr0ub4dor&3",
"telegram bot token 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
"databricks dapi0123456789abcdef0123456789abcdef",
"VAULT_TOKEN=s.AbCdEfGhIjKlMnOpQrStUvWx",
"age key: AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
"The Stripe webhook secret is whsec_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
"JWT eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
"mailgun key-3ax6xnjp29jd6fds4gc373sgvjxteol0",
"Encryption key: 6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b",
"license key: ABCD1-EFGH2-IJKL3-MNOP4-QRST5",
"PIN 4821",
]
PHRASED += [
"db_password=tiger",
"Secret: 8h3kd92jf0a",
"TOKEN: 4f9d2a7c1e8b",
"[auth]\ntoken = 5e2b9c8d1f3a7e6d",
"app:\n  secrets:\n    api_key: abc123def456ghi",
"sftp://deploy:Deploy2024@files.acme.com/upload",
"git+https://oauth2:glpat-Zx9YwV8uT7sR6qP5oN4m@gitlab.com/group/repo.git",
"jdbc:mysql://app:Sql!2024@db:3306/shop",
"ldap://cn=admin,dc=acme,dc=com:LdapPass1@ldap.acme.com",
"amqp://guest:guest@localhost:5672",
"smtp password for mailgun is 5f3e2d1c0b9a",
"authorization: Bearer abc.def.ghi-jkl_mno",
"Proxy-Authorization: Basic dXNlcjpwYXNz",
"-H \"X-Api-Key: 7d1f3e9a2b8c4d6e\"",
"my aws secret key is wJalrXUtnFEMI/K7MDENG+bPxRfiCYABCDEFGHIJ",
"AWS_SECRET_ACCESS_KEY=abcd1234EFGH5678ijkl9012MNOP3456qrst7890",
"Azure client secret: abc8Q~Zy7XwVuTsRqPoNmLkJiHgFeDcBa01234567",
"https://acme.blob.core.windows.net/x?sp=r&st=2024-01-01&se=2024-12-31&spr=https&sv=2022-11-02&sr=b&sig=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA%3D%3D",
"google client secret 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",
"https://hooks.slack.com/services/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",
"webhook: https://discordapp.com/api/webhooks/987654321098765432/Abc-123_def",
"twilio SK2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e",
"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",
"//registry.npmjs.org/:_authToken=npm_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ",
"pypi-AgENdGVzdC5weXBpLm9yZwIkNjk1ZTU2YzMtZjY5OC00OTk5LWE5ZmMtZmE5ZWE0OTc4YjY1AAIqWzMsIjVkNzI5NWQ3LTc",
"gitlab token is glpat-xYz12AbC34dEf56GhI78",
"HUGGING_FACE_HUB_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
"claude api key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-abcdefghijklmn_opqrstuvw-AA",
"openai project key sk-proj-abc123DEF456ghi789JKL012mno345PQR678stu901VWX234yz",
"1) ribbon 2) orbit 3) salad 4) gather 5) elder 6) dutch 7) wrist 8) cabin 9) mango 10) plastic 11) vault 12) tongue",
"Seed phrase (24 words): army van defense carry jealous true garbage claim echo media make crunch army van defense carry jealous true garbage claim echo media make crunch",
"ETH key: 8da4ef21b864d2cc526dbdb2a120bd2874c36c9d0a1fb7f8c63d7f7a8b41de8f",
"my solana wallet private key is 5MaiiCavjCmn9Hs1o3eznqDEhRwxo7pXiAYez7keQUviUkauRiTMD8DrESdrNjN8zd9mTmVhRvBJeg5vhyvgrAhG",
"card 4012.8888.8888.1881 exp 10/29",
"Mastercard: 5105 1051 0510 5100",
"Discover 6011-1111-1111-1117",
"My PIN's 7294",
"the pin is 0387 for the garage",
"combination for the bike lock: 4-2-7-1",
"my iphone passcode is 148203",
"PW = gr33nTea!",
"pwd: p@55w0rd",
"the pass is tangerine77",
"My password’s Hunter2024",
"Wifi password: Skyline_5G_2024",
"WPA2 key: BigBlueHouse42",
"network key is 7F3A9C2E1B",
"The password is: correcthorsebatterystaple",
"Password is 'qwertyuiop'",
"my password is dragon",
"password=letmein",
"The secret word is 'marmalade'",
"I'll use Zebra!Crossing9 as my new password",
"my gmail password is still the same: Kittens4ever",
"Login: bob@x.com Password: Ilovepizza1",
"ssh root@10.0.0.2 with password toor123",
"The backup encryption passphrase is 'river stone quietly morning'",
"BitLocker recovery key: 123456-654321-111111-222222-333333-444444-555555-666666",
"recovery key is 8F3D-22AB-91CE-7730",
]
PHRASED += [
"requests.get(url, auth=('admin', 'Adm1nPass!'))",
"aws configure set aws_secret_access_key Qw8+Er5/Ty2Ui9Op3As6Df1Gh7Jk4Lz0Xc8Vb5Nm",
"git config --global github.token ghp_1234567890abcdefghijABCDEFGHIJ123456",
"the wifi is 'MyNetwork' and the key 'Sunny!Day99'",
"my card number: 4111-1111-1111-1111 and CVV 123",
"client = OpenAI(api_key=\"sk-proj-aBcD1234eFgH5678iJkL9012mNoP3456qRsT\")",
"conn = psycopg2.connect(host='db', user='app', password='pgP4ss!')",
"heroku config:set STRIPE_KEY=sk_live_abcdefghijklmnop1234",
"My bank pin is 9-9-3-1",
"The new pw for the admin console is in this message: Vx93!kpQ",
"psst, password is Lemonade88",
"password: “Grüße2024!”",
"contraseña del wifi: Casa2024!",
"私のパスワードは hikari123 です",
"암호는 qwer1234 입니다",
"Remember my PIN please: 6612",
"here are the prod db creds: postgres / Pr0d-Db-2024",
"SECRET=abc",
"JWT_SECRET_KEY: 'supersecretjwtkey'",
"The API token (keep it safe): 6fa1c3b2-9d8e-4f7a-b6c5-d4e3f2a1b0c9",
"master password for my vault is Purple.Monkey.Dishwasher.7",
"The Wi‑Fi code is 55667788",
"my login pin is 2468 and my password is open-sesame-99",
"ssh-keygen output:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7",
"put this in .env -> OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKL",
"export AWS_ACCESS_KEY_ID=AKIAQWERTYUIOPASDFGH",
"The safe code is 3-1-4-1-5",
"my social security number is 536-90-4312",
"wallet seed: gravity machine north sort system female filter attitude volume fold club stay feature office ecology stable narrow fog",
# Found by an attack at stop 21: disguised tokens, passwords named by what they open, more languages.
"ghр_16C7e42F292c6912E7710c838347Ae178B4a",  # a Cyrillic "р"
"ｇｈｐ＿１６Ｃ７ｅ４２Ｆ２９２ｃ６９１２Ｅ７７１０ｃ８３８３４７Ａｅ１７８Ｂ４ａ",
"my token, encoded: Z2hwXzE2QzdlNDJGMjkyYzY5MTJFNzcxMGM4MzgzNDdBZTE3OEI0YQ==",
"The thing I log in with at work is Tr0ub4dor&3",
"I log into Gmail with Xk9#mP2$vL",
"NAS login admin:Sunflower#77",
"To unlock my laptop I type correct horse battery staple",
"My bank PIN is four eight two one",
"My bank password starts with Sunf",
"Mi clave del banco es Girasol#77",
"Şifrem Aycicegi#77",
"كلمة المرور الخاصة بي هي Ward#7731",
"我的登录口令是 xiangrikui77",
"मेरा पासवर्ड Surajmukhi#77 है",
"my pass\u200bword is Sunflower#77",  # a zero-width space inside the keyword
"ghp_A1b2\u200bC3d4E5f6\u200bG7h8I9j0K1l2\u200bM3n4O5p6Q7r8",
"here it is in hex: 6768705f313643376534324632393263363931324537373130633833383334374165313738423461",
"url-encoded: my%20password%20is%20Xk9%23mP2vL",
"my pa55word is Xk9#mP2vL",
"my Gmail login is Xk9#mP2vL",
"my phone unlocks with 4821",
"my laptop unlocks with correct horse battery staple",
# Disguised so that the rules do not read them as written (found by an attack: each was stored).
"DB ｐａｓｓｗｏｒｄ＝Fw7Secret!",
"my p\u0430ssword is Cy9Secret!",
"passw\u03bfrd=Gr7Secret!",
"my 𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝 is Mb6Secret!",
"my pass\u3164word is Hf5Secret!",
"My SSN is ０７８-０５-１１２０",
"My Visa card number is ４１１１ １１１１ １１１１ １１１１",
"My Visa card number is 4111\t1111\t1111\t1111",
"We deploy with ghp_aB3dE5fG\u2800hJ9kL1mN2pQ4\u2800S6tU8vW0xY3zA5 on Fridays",
# A credential named by its entry or an ancestor, not its own key.
"env:\n  - name: DB_PASSWORD\n    value: Zx9!kube-db-pass",
'{"secret": {"value": "Qw3rty!vault77"}}',
'[{"Key": "Name", "Value": "web-1"}, {"Key": "api_token", "Value": "Xk9mP2vLqqR7"}]',
# A card whose groups are split by commas, slashes, pipes, colons or quotes (found by an attack:
# each was stored, though a space-separated card was refused).
"My Visa card is 4539,1488,0343,6467.",
"My Visa card is 4539 / 1488 / 0343 / 6467.",
"Include the card 5105,1051,0510,5100 in every invoice.",
"4539 | 1488 | 0343 | 6467",
"4539;1488;0343;6467",
"Amex 3782:822463:10005",
"charge 4539, 1488, 0343, 6467 tomorrow",
"Visa 4539,1488,0343,6467,123",
"my card: 45,39,14,88,03,43,64,67",
"card 4539,1488,0343,6467,1234",
"12/27, 4539,1488,0343,6467 on my visa",
'{"card_groups": ["4539", "1488", "0343", "6467"]}',
# A name/value entry whose value key is not "value", in either order (found by the same attack).
'{"data": "Fd6!field-pw-2", "field": "password"}',
'{"name": "DB_PASSWORD", "data": "Dt4!data-pw-5"}',
'{"label": "API key", "content": "Lc7!content-k-4"}',
'{"wifi": {"ssid": "HomeNet", "psk": "Ps8!wifi-psk-6"}}',
]

SECRETS = build_secrets() + [("phrased", text) for text in PHRASED]


LOOK_ALIKES = [
    "Reset your password at https://example.com/reset.",
    "PIN codes are four digits at this bank.",
    "I forgot my password again.",
    "The password must be at least 12 characters.",
    "My password is not working since the update.",
    "My password manager is 1Password.",
    "Passwords should never be shared over chat.",
    "The password is on a sticky note under the keyboard.",
    "Her password was stolen in the breach.",
    "I changed my password to something stronger.",
    "The passcode expires in 10 minutes.",
    "A PIN is required to unlock the phone.",
    "Your one-time code will arrive by SMS.",
    "The CVV is the three digits on the back of the card.",
    "What's the wifi password?",
    "Ask IT for the VPN password.",
    "The API key goes in the X-Api-Key header.",
    "Set OPENAI_API_KEY=<your-api-key> before running the script.",
    "export API_KEY=${API_KEY}",
    "api_key: sk-...",
    "token: xxxxxxxxxxxxxxxx",
    "DB_PASSWORD=changeme in the template; change it on first login.",
    "Authorization: Bearer <token>",
    "The secret to good bread is time.",
    "The key is to stay consistent.",
    "Keys are in the drawer by the door.",
    "Connect to postgres://db.internal:5432/app as the app user.",
    "Clone https://github.com/acme/widgets.git and run make.",
    "The remote is git@github.com:acme/widgets.git",
    "Email me at alice@example.com about the offsite.",
    "Request 550e8400-e29b-41d4-a716-446655440000 failed with a timeout.",
    "Fixed in commit 9fceb02d0ae598e95dc970b74767f19372d61af8.",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "The tx hash is 0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060.",
    "Send the donation to bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq.",
    "The old donation address was 1BoatSLRHtKNngkdXEeobR76b53LETtpyT.",
    "Order #A-10293 shipped; tracking 1Z999AA10123456784.",
    "Call me at +1 512-555-0199 after 6pm.",
    "The ISBN is 978-3-16-148410-0.",
    "We upgraded to version 2.14.3 and Python 3.11.7.",
    "The server is at 192.168.10.24, port 8443.",
    "My card ending in 4242 was declined.",
    "4111 1111 1111 1112 is a Luhn-invalid number.",
    "The zip code is 94103.",
    "Promo code SUMMER20 gives 20% off.",
    "Error code 0x80070005 means access denied.",
    "Use max_tokens=1024 and temperature 0.2.",
    "The primary key is user_id.",
    "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop",
    "Watch https://www.youtube.com/watch?v=dQw4w9WgXcQ tonight.",
    "The spec is at https://docs.google.com/document/d/1aBcD3fGhIjK4lMnOpQ5rStUvW6xYz7AbC8dEf9GhIj/edit",
    "Tokenization splits text into tokens before the model sees it.",
    "The seed phrase should be written on paper and stored offline.",
    "Please follow the simple daily routine and enjoy a happy life with your family.",
    "Meeting ID: 845 2231 9087",
    "The flight confirmation is QX7P2L.",
    "My locker is number 42 on the second floor.",
    "IMEI 35-209900-176148-1 is on the box.",
    "The password reset link expires after 24 hours.",
    "Never put your password in a URL.",
    "The key for the map legend is at the bottom.",
    "The recovery email is alice.backup@example.com.",
    "Use `getUserByEmailAddress2024Handler` for lookups.",
    "The pass is closed in winter.",
    "Password: ********",
    "The default password is printed on the router label.",
    "I use a passphrase of four random words.",
    "my pin is four digits long",
    "Your password must include a symbol.",
    "The token expired, request a new one.",
]
LOOK_ALIKES += [
"Reset your password at https://example.com/reset.",
"PIN codes are four digits at this bank.",
"I need to reset my password tomorrow.",
"The password policy requires 14 characters and a symbol.",
"Did you get the new wifi password from Sam?",
"Passwords are stored hashed with bcrypt.",
"She keeps her passwords in a notebook.",
"Never share your PIN with anyone.",
"The PIN pad at the store was broken.",
"My password expired so I had to change it.",
"Two-factor authentication adds a second code.",
"The API key should be stored in an environment variable.",
"Rotate your API keys every 90 days.",
"Set the token in the Authorization header as Bearer <token>.",
"Use `export OPENAI_API_KEY=your-key-here`.",
"STRIPE_SECRET_KEY=sk_test_xxxxxxxxxxxxxxxxxxxxxxxx",
"API_KEY=${{ secrets.API_KEY }}",
"password: \"{{ vault_password }}\"",
"DB_PASSWORD=<db-password>",
"token: <YOUR_TOKEN>",
"The tracking number is 9400 1000 0000 0000 0000 00.",
"Order 112-7654321-1234567 arrived.",
"My phone number is (555) 123-4567.",
"The meeting is at 10:30 in room 4B.",
"Version 3.2.1-beta.4 fixed the bug.",
"The commit a1b2c3d fixed it; full hash 3f786850e387550fdab836ed7e6dc881de23001b.",
"UUID 123e4567-e89b-12d3-a456-426614174000",
"Her birthday is 1990-04-12.",
"The invoice number is INV-2024-000123.",
"Use port 5432 for Postgres and 6379 for Redis.",
"Connect to redis://localhost:6379/0 for the cache.",
"The docs live at https://docs.example.com/api/v2/auth?lang=en.",
"Our office wifi network is called Guest-5G.",
"My favourite song is 'Passcode' by some band.",
"The secret ingredient is cinnamon.",
"The password field cannot be empty.",
"I typed my password wrong three times.",
"Enter your password to continue.",
"What's the PIN for the printer again?",
"The key takeaway is to test early.",
"The keyboard shortcut is Ctrl+Shift+K.",
"We met at the Key West conference.",
"He passed the exam with 92 points.",
"The pass rate was 85% this year.",
"Her boarding pass is in the wallet app.",
"Bus pass costs $50 a month.",
"The token economy in the game uses gold coins.",
"LLM context window is 128k tokens.",
"Set max_tokens to 4096.",
"My credit score is 780.",
"Card ending 1234 expires soon.",
"The ISBN 978-0-306-40615-7 is the second edition.",
"SHA-256 of the file: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
"The Ethereum address is 0x742d35Cc6634C0532925a3b844Bc454e4438f44e.",
"Docker image digest sha256:4bcff63911fcb4448bd4fdacec207030997caf25e9bea4045fa6c8c44de311d1",
"My seat is 14C and the gate is B22.",
"The lock screen uses a six-digit PIN.",
"Send it to support@example.com with subject 'password reset'.",
"The base64 of 'hello' is aGVsbG8=.",
"Call 1-800-555-0199 for support.",
"The secret santa draw is on Friday.",
"Let me know if the key fob works.",
"He lost the key to the shed.",
"The access code for the conference call is on the invite.",
"Authorization failed with 401 Unauthorized.",
"The bearer of this letter is my brother.",
"Basic plan costs $10 per month.",
"The token was revoked yesterday.",
"GitHub tokens start with ghp_ and GitLab ones with glpat-.",
"AWS keys start with AKIA.",
"Stripe test keys look like sk_test_....",
"Example: sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
]
LOOK_ALIKES += [
"I changed the wifi network name to Skyline.",
"The password reset email never arrived.",
"Our DB password rotates every month.",
"Passwords must be at least 12 characters long.",
"the pass was closed due to snow",
"Let's pass on that offer.",
"PIN entry is disabled after 3 tries.",
"My PIN got blocked yesterday.",
"The PIN is the same as the old one.",
"Secret Service agents were at the event.",
"The recipe's secret is brown butter.",
"Token ring networks are obsolete.",
"API keys go in .env, never in git.",
"Use `redis://localhost:6379` locally.",
"The connection string format is Server=host;Database=db;",
"Bearer tokens expire after an hour.",
"Basic income was discussed at the summit.",
"The SSH fingerprint is SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8.",
"Build 2024.11.03-rc2 shipped.",
"The key change was moving to Postgres 16.",
"My seed company sells heirloom tomatoes.",
"We planted twelve rows of corn, beans, squash, and sunflowers this spring.",
"The combination of salt and caramel is great.",
"Garage door opener needs new batteries.",
"The code review is at 3pm.",
"Error code E1234 on the washing machine.",
"My employee number is 004512.",
"The bus route 42 goes downtown.",
"Flight BA 2490 departs at 07:15.",
"Room code for the Zoom is on the calendar.",
"Her locker combination changed, ask the office.",
"My favourite passphrase generator is diceware.",
"The wallet app shows a balance of 0.5 ETH.",
"I keep my seed phrase in a fireproof safe.",
"Card payments over $100 need a signature.",
"The IBAN field is optional.",
"For security, never email your card number.",
"He wrote 'password123' as an example of a bad password.",
"The tutorial uses sk-... as a placeholder key.",
"Set DATABASE_URL=postgres://user:password@localhost/db in development.",
]
LOOK_ALIKES += [
"Passcode screens lock after one minute.",
"Use the Authorization header with a Bearer token from the login endpoint.",
"headers = {'Authorization': f'Bearer {token}'}",
"client = OpenAI(api_key=os.environ['OPENAI_API_KEY'])",
"password = getpass.getpass()",
"db_password = settings.DB_PASSWORD",
"The 'Forgot password' link is below the login button.",
"Keep your private key private.",
"Generate a new SSH key with ssh-keygen -t ed25519.",
"Our API rate limit is 1000 requests per hour.",
"My pin board is full of photos.",
"The safe is in the basement.",
"Add your key to ~/.ssh/authorized_keys.",
"The secret is out: we're moving to Denver!",
"Her password-protected PDF wouldn't open.",
"I passed the driving test on 2024-03-05.",
"Pass the salt please.",
"My token collection includes subway tokens from 1970.",
"The credentials are managed by Vault.",
"Login with your company SSO.",
"I bought a 12-word poem book: love, hope, joy, peace, faith, grace, light, truth, mercy, trust, honor, pride.",
"The password-less login uses magic links.",
"Authentication uses OAuth 2.0 with PKCE.",
"password_min_length = 12",
"token_expiry: 3600",
"api_version: 2024-06-01",
"public_key: MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=",
# What the rules added at stop 21 must leave alone.
"I log in with Google every morning.",
"I log into Slack with my work account.",
"To unlock my phone I use my fingerprint.",
"To unlock the bonus level, type the cheat code from the manual.",
"My password starts with a capital letter and ends with a symbol.",
"The PIN is one of four options on the form.",
"Şifremi unuttum, yenisini istedim.",
"Mi clave favorita es la paciencia.",
"كلمة المرور قوية جدا",
"我的登录口令忘记了",
"मेरा पासवर्ड भूल गया",
"ＡＢＣ社の会議は３時からです。",
"Мой пароль очень длинный и надежный.",
# False positives a first version of those rules had (found by a second attack).
"After I unlocked the laptop I typed up the meeting notes.",
"To unlock the screen, type anything and press Enter.",
"To unlock a cell in Excel, type Ctrl+1 and uncheck Locked.",
"To unlock the bootloader I typed fastboot flashing unlock.",
"To unlock his phone, she typed his birthday into the box.",
"I log in with Auth0 at work.",
"I sign in with Office365 at work.",
"I log into Jira with SAML-2.0 SSO.",
"I log into ChatGPT with GPT-4o selected.",
"The username I log in with is jsmith42.",
"The email I sign in with is bob.smith2023@gmail.com.",
"The NAS login 192.168.1.20:5000 is slow today.",
"Use login localhost:8080 for the dev server.",
"My password starts with something only I know.",
"Your password ends in .com? That's weird.",
"The combination is one, two, three, go!",
"The combo is one, two, one, two — a jab-jab-cross pattern.",
"La clave del curso es MAT-1001.",
"Şifre: aynı, değiştirmedim.",
"كلمة السر هي الصبر.",
"पासवर्ड: एडमिन से पूछें।",
"淘口令是￥Xk9mP2vL￥，快去抢。",
"口令：芝麻开门。",
"ＰＩＮは４桁です。",
"sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
"The report is at https://example.com/my%20docs/report%202024.pdf",
"My login is jo@example.com.",
"My phone unlocks with Face ID.",
"The login is at the top right of the page.",
"My laptop opens with a fingerprint scan.",
# Text that folding (full-width, other scripts, emoji with a variation selector) or name/value
# entries must leave alone.
"PINは4桁です。",
"密码是6位数字。",
"We met at the café ☕️ and talked about the trip ✈️.",
"Η ΡΟΗ του νερού είναι καλή.",
"env:\n  - name: DB_USER\n    value: admin\n  - name: DB_HOST\n    value: db.internal",
'{"secrets": {"region": "us-east-1", "owner": "platform-team"}}',
# Numbers separated by commas, slashes, pipes or colons that are no card, and name/value entries
# whose value describes a credential rather than gives one: what the card and entry rules added
# after the separator attack must leave alone.
"The population grew from 1,234,567 to 2,345,678 and then to 13,456,789,012.",
"The budget is $4,512,345,678,901 over ten years.",
"Coordinates: 40.712776, -74.005974 and 34.052235, -118.243683.",
"Rated 4 / 5 stars by 1,024 reviewers, 3 / 5 by 88, 5 / 5 by 2,310.",
"Dates: 2024-01-15, 2024-02-15, 2024-03-15, 2024-04-15.",
"Years active: 2019, 2020, 2021, 2022, 2023.",
"Call 512-555-0199, 512-555-0123 or 737-555-0188.",
"Supported versions: 3.11.7, 3.12.1, 3.13.0 | 2.7.18",
"Lottery numbers: 4, 8, 15, 16, 23, 42, 7, 11, 19",
"Scores: 4, 5, 3, 5, 4, 4, 5, 3, 5, 4, 5, 4, 3, 5, 4, 4",
"Times: 10:30, 11:45, 13:15, 14:50, 16:05",
"Bus routes 12 | 14 | 22 | 41 | 58 | 63 | 77 | 91",
'{"ratings": [4, 5, 3, 5, 4, 4, 5, 3, 5, 4, 5, 4, 3, 5, 4, 4]}',
'{"years": ["2019", "2020", "2021", "2022"]}',
'{"field": "password", "data": {"min_length": 12}}',
'{"name": "token_count", "data": 1234}',
'{"wifi": {"ssid": "HomeNet", "security": "WPA2-PSK"}}',
'{"label": "Password reset guide", "content": "Click Forgot password on the login page"}',
]


def store_bytes(path: Path) -> bytes:
    """Every byte under a store directory (Chroma's database and write log, the local database):
    what the secret tests look through for a secret that must not be there."""
    return b"".join(f.read_bytes() for f in sorted(path.rglob("*")) if f.is_file())

