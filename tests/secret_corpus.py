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


SECRETS = build_secrets()


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
