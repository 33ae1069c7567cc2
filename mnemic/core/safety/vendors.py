"""Credentials with a shape of their own: a vendor prefix, a fixed length, a checksum.

Each rule is specific enough to need no context. Coverage follows gitleaks' `config/gitleaks.toml`
and Yelp detect-secrets' `detect_secrets/plugins/` (read, not vendored: lengths are loosened where
vendors have changed them, so that a key one character longer than documented is still caught).
Webhook URLs that carry their token in the path are here too, as is the PEM/OpenSSH/PGP private
key block (refused from its header on, so a truncated paste is refused as well).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .hits import SecretHit
from .values import is_placeholder

_B = r"(?<![A-Za-z0-9_\-])"  # a token starts here: not in the middle of a longer word
_E = r"(?![A-Za-z0-9_\-])"   # and ends here

# (kind, needles, pattern): a rule runs only when one of its needles is in the lower-cased text.
RULES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # -- AI providers
    ("anthropic_key", ('sk-ant-',), r"sk-ant-(?:api|admin|oat|ort|sid)\d{2}-[A-Za-z0-9_\-]{20,}"),
    ("anthropic_key", ('sk-ant-',), r"sk-ant-[A-Za-z0-9_\-]{32,}"),
    ("openai_key", ('sk-',), r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}"),
    ("openai_key", ('sk-',), r"sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}"),
    ("openai_key", ('sk-',), r"sk-[A-Za-z0-9]{32,}" + _E),
    ("groq_key", ('gsk_',), r"gsk_[A-Za-z0-9]{40,}"),
    ("replicate_token", ('r8_',), r"r8_[A-Za-z0-9]{30,}"),
    ("perplexity_key", ('pplx-',), r"pplx-[A-Za-z0-9]{40,}"),
    ("xai_key", ('xai-',), r"xai-[A-Za-z0-9]{60,}"),
    ("huggingface_token", ('hf_', 'api_org_'), r"hf_[A-Za-z0-9]{30,}"),
    ("huggingface_token", ('hf_', 'api_org_'), r"api_org_[A-Za-z0-9]{30,}"),
    ("fireworks_key", ('fw_',), r"fw_[A-Za-z0-9]{20,}"),
    # -- cloud
    ("aws_access_key", ('a3t', 'akia', 'asia', 'abia', 'acca', 'agpa', 'aida', 'aroa', 'aipa', 'anpa', 'anva', 'apka'), r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}" + _E),
    ("aws_bedrock_key", ('absk',), r"ABSK[A-Za-z0-9+/]{100,}={0,2}"),
    ("google_api_key", ('aiza',), r"AIza[0-9A-Za-z_\-]{35}"),
    ("google_oauth_secret", ('gocspx-',), r"GOCSPX-[A-Za-z0-9_\-]{20,}"),
    ("google_oauth_token", ('ya29.',), r"ya29\.[0-9A-Za-z_\-]{20,}"),
    ("google_refresh_token", ('1//0',), r"1//0[0-9A-Za-z_\-]{30,}"),
    ("azure_ad_client_secret", ('q~',), r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}"),
    ("azure_key", ('accountkey=', 'sharedaccesskey=', 'sharedsecretvalue='), r"(?i:AccountKey|SharedAccessKey|SharedSecretValue)=[A-Za-z0-9+/]{20,}={0,2}"),
    ("alibaba_key", ('ltai',), r"LTAI[A-Za-z0-9]{20}" + _E),
    ("digitalocean_token", ('_v1_',), r"do[opr]_v1_[a-f0-9]{64}"),
    ("databricks_token", ('dapi',), r"dapi[a-f0-9]{32}(?:-\d)?" + _E),
    ("heroku_key", ('hrku-',), r"HRKU-[A-Za-z0-9_\-]{40,}"),
    ("vault_token", ('hvs.', 'hvb.'), r"hv[sb]\.[A-Za-z0-9_\-]{24,}"),
    ("terraform_token", ('.atlasv1.',), r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,}"),
    ("pulumi_token", ('pul-',), r"pul-[a-f0-9]{40}"),
    ("doppler_token", ('dp.',), r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,}"),
    ("cloudflare_origin_key", ('v1.0-',), r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    ("supabase_key", ('sbp_', 'sb_secret_'), r"sb(?:p|_secret)_[A-Za-z0-9_\-]{30,}"),
    ("planetscale_token", ('pscale_',), r"pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_.\-=]{30,}"),
    ("openshift_token", ('sha256~',), r"sha256~[A-Za-z0-9_\-]{43}"),
    ("flyio_token", ('fo1_', 'fm1', 'fm2'), r"(?:fo1_[\w\-]{40,}|fm[12][ar]?_[A-Za-z0-9+/]{60,}={0,3})"),
    # -- code hosting and packages
    ("github_token", ('gh', 'github_pat_'), r"gh[pousr]_[A-Za-z0-9]{30,}"),
    ("github_token", ('gh', 'github_pat_'), r"github_pat_[A-Za-z0-9_]{40,}"),
    ("gitlab_token", ('gl', 'gr1348941'), r"gl(?:pat|dt|rt|ptt|oas|ft|imt|agent|soat|ffct|cbt)-[A-Za-z0-9_\-]{20,}"),
    ("gitlab_token", ('gl', 'gr1348941'), r"GR1348941[A-Za-z0-9_\-]{20}"),
    ("npm_token", ('npm_',), r"npm_[A-Za-z0-9]{36}" + _E),
    ("pypi_token", ('pypi-',), r"pypi-AgE[A-Za-z0-9_\-]{40,}"),
    ("pypi_token", ('pypi-',), r"pypi-[A-Za-z0-9_\-]{50,}"),
    ("rubygems_token", ('rubygems_',), r"rubygems_[a-f0-9]{48}"),
    ("clojars_token", ('clojars_',), r"(?i:CLOJARS_)[a-z0-9]{60}"),
    ("artifactory_key", ('akcp',), r"AKCp[A-Za-z0-9]{60,}"),
    ("postman_key", ('pmak-',), r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("readme_key", ('rdme_',), r"rdme_[a-z0-9]{70}"),
    ("sourcegraph_token", ('sgp_',), r"sgp_(?:[a-f0-9]{16}_)?[a-f0-9]{40}"),
    # -- payments and commerce
    ("stripe_key", ('_live_', '_test_', '_prod_'), r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}"),
    ("stripe_webhook_secret", ('whsec_',), r"whsec_[A-Za-z0-9+/=]{24,}"),
    ("square_token", ('sq0a', 'sq0c', 'eaaa'), r"(?:sq0atp|sq0csp|EAAA)[A-Za-z0-9_\-]{22,}"),
    ("shopify_token", ('shp',), r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    ("flutterwave_key", ('flwseck',), r"FLWSECK(?:_TEST)?-[a-hA-H0-9]{12,}"),
    ("duffel_token", ('duffel_',), r"duffel_(?:test|live)_[A-Za-z0-9_\-=]{40,}"),
    ("easypost_key", ('ezak', 'eztk'), r"EZ[AT]K[A-Za-z0-9]{50,}"),
    ("shippo_token", ('shippo_',), r"shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    ("adobe_secret", ('p8e-',), r"p8e-[A-Za-z0-9]{32}"),
    ("coinbase_key", ('/apikeys/',), r"organizations/[0-9a-f\-]{36}/apiKeys/[0-9a-f\-]{36}"),
    # -- messaging and mail
    ("slack_token", ('xox', 'xapp-'), r"xox[abposre]-(?:\d+-)?[A-Za-z0-9\-]{10,}"),
    ("slack_token", ('xox', 'xapp-'), r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+"),
    ("slack_webhook", ('hooks.slack.com',), r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+\-]{20,}"),
    ("discord_webhook", ('/webhooks/',), r"(?:discord(?:app)?\.com|discord\.gg)/api(?:/v\d+)?/webhooks/\d{5,}/[A-Za-z0-9_\-]{6,}"),
    ("teams_webhook", ('webhook.office.com',), r"[A-Za-z0-9\-]+\.webhook\.office\.com/webhook[b2]*/[A-Za-z0-9@\-/]{40,}"),
    ("zapier_webhook", ('hooks.zapier.com',), r"hooks\.zapier\.com/hooks/catch/\d+/[A-Za-z0-9]+"),
    ("ifttt_key", ('maker.ifttt.com',), r"maker\.ifttt\.com/(?:trigger/[^/\s]+/with/)?key/[A-Za-z0-9_\-]{16,}"),
    ("telegram_bot_token", (':',), r"\d{8,10}:[A-Za-z0-9_\-]{34,}" + _E),
    ("telegram_bot_token", (':',), r"api\.telegram\.org/bot\d{6,}:[A-Za-z0-9_\-]{30,}"),
    ("discord_token", ('.',), r"[MNO][A-Za-z\d_\-]{23,27}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,}"),
    ("twilio_key", ('sk',), r"SK[0-9a-fA-F]{32}" + _E),
    ("sendgrid_key", ('sg.',), r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    ("sendinblue_key", ('xkeysib-',), r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("mailgun_key", ('key-',), r"key-[0-9a-zA-Z]{32}" + _E),
    ("mailchimp_key", ('-us',), r"[0-9a-f]{32}-us\d{1,2}" + _E),
    ("mapbox_secret_token", ('sk.eyj',), r"sk\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{10,}"),
    # -- observability, productivity and the rest
    ("new_relic_key", ('nrak-', 'nrii-', 'nrjs-'), r"NR(?:AK|II|JS)-[A-Za-z0-9]{19,}"),
    ("sentry_token", ('sntry',), r"sntry[su]_[A-Za-z0-9+/=_]{40,}"),
    ("grafana_token", ('glc_', 'glsa_', 'eyjrijoi'), r"(?:glc_[A-Za-z0-9+/]{32,}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9]{40,})"),
    ("dynatrace_token", ('dt0c01.',), r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    ("linear_key", ('lin_',), r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    ("notion_token", ('ntn_', 'secret_'), r"(?:ntn_[0-9]{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43})"),
    ("airtable_token", ('pat',), r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    ("atlassian_token", ('atatt3',), r"ATATT3[A-Za-z0-9_\-=]{100,}"),
    ("asana_token", ('/',), r"[0-2]/\d{10,16}(?:/\d{10,16})?:[a-f0-9]{32}"),
    ("prefect_key", ('pnu_',), r"pnu_[A-Za-z0-9]{36}"),
    ("infracost_key", ('ico-',), r"ico-[A-Za-z0-9]{32}"),
    ("scalingo_token", ('tk-us-',), r"tk-us-[\w\-]{48}"),
    ("maxmind_key", ('_mmk',), r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk"),
    ("onepassword_key", ('a3-',), r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}"),
    ("onepassword_token", ('ops_eyj',), r"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}"),
    ("age_secret_key", ('age-secret-key-1',), r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("facebook_token", ('eaa',), r"EAA[CM][A-Za-z0-9]{60,}"),
    ("dropbox_token", ('sl.',), r"sl\.[A-Za-z0-9_\-=]{100,}"),
    ("octopus_key", ('api-',), r"API-[A-Z0-9]{26}" + _E),
    ("jwt", ('eyj',), r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-+/=]*"),
    ("crypto_extended_private_key", ('prv',), r"[xyztuv]prv[1-9A-HJ-NP-Za-km-z]{100,112}"),
)

_COMPILED = tuple((kind, needles, re.compile(_B + pattern)) for kind, needles, pattern in RULES)

_PRIVATE_KEY = re.compile(
    r"-----BEGIN[ A-Z0-9_\-]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[ A-Z0-9_\-]{0,40}PRIVATE KEY"
    r"(?: BLOCK)?-----|\Z)"
    r"|PuTTY-User-Key-File-\d: .*?(?:Private-MAC: [0-9a-f]+|\Z)",
    re.DOTALL,
)


MIN_TOKEN_LENGTH = 16  # no rule below matches a shorter word


def find(text: str, lowered: str, longest_word: int) -> Iterator[SecretHit]:
    if "PRIVATE KEY" in text or "PuTTY-User-Key" in text:
        for match in _PRIVATE_KEY.finditer(text):
            yield SecretHit("private_key", match.start(), match.end())
    if longest_word < MIN_TOKEN_LENGTH:
        return
    for kind, needles, pattern in _COMPILED:
        if any(needle in lowered for needle in needles):
            for match in pattern.finditer(text):
                if not is_placeholder(match.group()):  # "sk_test_xxxxxxxx" shows the shape, holds no key
                    yield SecretHit(kind, match.start(), match.end())
