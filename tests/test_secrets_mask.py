"""Secret masking: a corpus in both directions, line structure, and properties over arbitrary text.

Fake secrets are assembled at run time from a seeded generator, so no secret-shaped literal sits in
the source (scanners stay quiet) and every run uses the same values.
"""

import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocr_hook.secrets_mask import MARKER, is_secret_name, looks_random, mask_secrets, shannon_entropy

_RNG = random.Random(20240601)
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def rand(n: int, alphabet: str = ALNUM) -> str:
    groups = [g for g in (string.ascii_lowercase, string.ascii_uppercase, string.digits) if set(g) & set(alphabet)]
    while True:
        value = "".join(_RNG.choice(alphabet) for _ in range(n))
        # Keep the corpus clearly random: at least two character classes when the alphabet has them.
        if sum(any(c in group for c in value) for group in groups) >= min(2, len(groups)):
            return value


def pem(kind: str = "RSA PRIVATE KEY", lines: int = 6, prefix: str = "") -> str:
    body = [prefix + rand(64, B64) for _ in range(lines)] + [prefix + rand(20, B64) + "=="]
    return "\n".join([prefix + f"-----BEGIN {kind}-----", *body, prefix + f"-----END {kind}-----"])


SECRET = rand(24)
HEX_SECRET = rand(32, "0123456789abcdef")
AWS_SECRET = rand(40, B64)

# (description, text, the secret values that must disappear)
POSITIVES: list[tuple[str, str, list[str]]] = []


def positive(description: str, text: str, *secrets: str) -> None:
    POSITIVES.append((description, text, list(secrets) or [text]))


_rsa = pem()
positive("rsa block", _rsa, *_rsa.splitlines()[1:-1])
for _kind in ("OPENSSH PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "ENCRYPTED PRIVATE KEY",
              "DSA PRIVATE KEY", "PGP PRIVATE KEY BLOCK"):
    _block = pem(_kind, lines=3)
    positive(f"{_kind.lower()} block", _block, *_block.splitlines()[1:-1])
_in_code = pem(lines=3)
positive("key block inside a python string", f'KEY = """{_in_code}"""\nprint(KEY)\n', *_in_code.splitlines()[1:-1])
_diff = pem(lines=4, prefix="+")
positive("key block in a diff hunk", f" context\n{_diff}\n context\n", *[line[1:] for line in _diff.splitlines()[1:-1]])
_truncated = "\n".join(pem(lines=5).splitlines()[:-2])
positive("truncated key block without END", "+" + _truncated.replace("\n", "\n+") + "\n+def after():\n",
         *_truncated.splitlines()[1:])
_escaped_body = rand(60, B64)
positive("key block with escaped newlines on one line",
         f'key = "-----BEGIN RSA PRIVATE KEY-----\\n{_escaped_body}\\n-----END RSA PRIVATE KEY-----\\n"',
         _escaped_body)
_headers = pem(lines=2).replace("-----\n", "-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,"
                                 + rand(32, "0123456789ABCDEF") + "\n\n", 1)
positive("legacy encrypted key with headers", _headers, *_headers.splitlines()[-3:-1])

_akia = "AKIA" + rand(16, UPPER_DIGITS)
positive("aws access key id", f"aws_access_key_id = {_akia}", _akia)
_asia = "ASIA" + rand(16, UPPER_DIGITS)
positive("aws session key id in json", f'{{"AccessKeyId": "{_asia}"}}', _asia)
positive("aws secret in an env file", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET)
positive("aws secret in python", f'aws_secret_access_key = "{AWS_SECRET}"', AWS_SECRET)
for _prefix in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"):
    _token = _prefix + rand(36)
    positive(f"github {_prefix}", f"git clone https://{_token}@github.com/o/r.git", _token)
_pat = "github_pat_" + rand(22) + "_" + rand(59)
positive("github fine-grained", f"gh_token: {_pat}", _pat)
_glpat = "glpat-" + rand(20, URLSAFE)
positive("gitlab", f'headers = {{"PRIVATE-TOKEN": "{_glpat}"}}', _glpat)
_slack = "xoxb-" + rand(12, string.digits) + "-" + rand(13, string.digits) + "-" + rand(24)
positive("slack bot token", f"client = WebClient(token='{_slack}')", _slack)
_slack_user = "xoxp-" + rand(12, string.digits) + "-" + rand(32)
positive("slack user token in prose", f"use {_slack_user} for now", _slack_user)
_stripe = "sk_live_" + rand(24)
positive("stripe secret key", f"stripe.api_key = '{_stripe}'", _stripe)
_stripe_r = "rk_live_" + rand(24)
positive("stripe restricted key", f"const k = `{_stripe_r}`;", _stripe_r)
_google = "AIza" + rand(35, URLSAFE)
positive("google api key", f'<script src="https://maps.googleapis.com/maps/api/js?key={_google}"></script>',
         _google)
_anthropic = "sk-ant-api03-" + rand(80, URLSAFE)
positive("anthropic key", f"client = Anthropic(api_key='{_anthropic}')", _anthropic)
_openai = "sk-proj-" + rand(48, URLSAFE)
positive("openai project key", f"OPENAI_API_KEY={_openai}", _openai)
_openai_legacy = "sk-" + rand(48)
positive("openai legacy key", f"openai.api_key = '{_openai_legacy}'", _openai_legacy)
_npm = "npm_" + rand(36)
positive("npm token in .npmrc", f"//registry.npmjs.org/:_authToken={_npm}", _npm)
_jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJ" + rand(40, URLSAFE) + "." + rand(43, URLSAFE)
positive("jwt", f"curl -H 'X-Session: {_jwt}' https://api", _jwt)
_jwt_unsigned = "eyJhbGciOiJub25lIn0.eyJ" + rand(30, URLSAFE) + "."
positive("unsigned jwt", f"token={_jwt_unsigned}", _jwt_unsigned[:-1])

positive("python password", f'password = "{SECRET}"', SECRET)
positive("python annotated", f'API_KEY: str = "{SECRET}"', SECRET)
positive("python attribute", f"self.client_secret = '{SECRET}'", SECRET)
positive("python dict item", f'settings["db_password"] = "{SECRET}"', SECRET)
positive("python keyword argument", f'connect(host="db", password="{SECRET}")', SECRET)
positive("python bytes literal", f"secret = b'{SECRET}'", SECRET)
positive("js const camelCase", f'const apiKey = "{SECRET}";', SECRET)
positive("js object key", f"  authToken: '{SECRET}',", SECRET)
positive("go short declaration", f'accessToken := "{SECRET}"', SECRET)
positive("java field", f'private static final String PRIVATE_KEY = "{SECRET}";', SECRET)
positive("kotlin typed val", f'val clientSecret: String = "{SECRET}"', SECRET)
positive("php array", f"'password' => '{SECRET}',", SECRET)
positive("json", f'{{"name": "svc", "api_key": "{HEX_SECRET}"}}', HEX_SECRET)
positive("yaml bare", f"database:\n  password: {SECRET}\n  host: db\n", SECRET)
positive("yaml quoted", f'auth: "{SECRET}"', SECRET)
positive("dotenv", f"SLACK_SIGNING_SECRET={HEX_SECRET}\n", HEX_SECRET)
positive("shell export", f'export GITHUB_TOKEN="{SECRET}"', SECRET)
positive("toml", f'token = "{SECRET}"  # rotate monthly', SECRET)
positive("ini with spaces", f"passwd = {SECRET}", SECRET)
positive("command-line flag", f"mysql --user=app --password={SECRET} db", SECRET)
positive("kebab header name", f'"x-api-key": "{SECRET}"', SECRET)
positive("base64 secret with padding", f"SECRET_KEY={AWS_SECRET[:30]}==", AWS_SECRET[:30])
positive("secret with punctuation", f"DB_PASS='{SECRET[:10]}!@#{SECRET[10:]}'", SECRET[10:])
positive("hex 32 secret", f"private_key = '{HEX_SECRET}'", HEX_SECRET)
positive("bearer header", f'requests.get(url, headers={{"Authorization": "Bearer {SECRET}"}})', SECRET)
positive("basic header in a curl line", f"curl -H 'authorization: Basic {AWS_SECRET}' x", AWS_SECRET)
positive("password in a url", f"DATABASE_URL=postgres://app:{SECRET}@db.internal:5432/app", SECRET)
positive("diff added line", f"+    password = '{SECRET}'", SECRET)
positive("two secrets on one line", f"token={SECRET} secret={HEX_SECRET}", SECRET, HEX_SECRET)


NEGATIVES = [
    "password = get_password()",
    "password = os.environ['DB_PASSWORD']",
    "api_key = settings.ANTHROPIC_API_KEY",
    'token = os.getenv("GITHUB_TOKEN")',
    "const token = req.headers.authorization;",
    "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased-whole-word')",
    "max_tokens = 4096",
    "MAX_TOKENS_PER_REQUEST = 1000000000000000",
    'password = "hunter2"',
    'password = "changeme"',
    'password = "changeme_in_production"',
    'token = "${GITHUB_TOKEN}"',
    'api_key: "<your-api-key-here>"',
    "secret_key = 'your-secret-key-goes-here'",
    'password: "{{ vault_db_password }}"',
    "password: ${{ secrets.DB_PASSWORD }}",
    'PASSWORD = "xxxxxxxxxxxxxxxxxxxxxxxx"',
    'token = "****************"',
    "SECRET_KEY = 'django-insecure-REPLACE-ME-before-deploy'",
    'PASSWORD_FIELD = "password_confirmation"',
    'secret_key_env = "DJANGO_SECRET_KEY"',
    'auth_backend = "django.contrib.auth.backends.ModelBackend"',
    'auth_header_name = "X-Authorization-Token"',
    'token_url = "https://oauth2.googleapis.com/token"',
    'password_file = "/run/secrets/db_password"',
    "credentials_path: ~/.config/gcloud/application_default_credentials.json",
    'auth_content_type = "application/x-www-form-urlencoded"',
    'self.password = "CorrectHorseBatteryStaple"',
    'secret_name = "my-app-tls-secret-2024"',
    'token_type_hint = "refresh_token_expired"',
    "password_reset_timeout = 259200",
    'cache_key = "a8f5f167f44f4964e6c998dee827110c"',
    'checksum = "d41d8cd98f00b204e9800998ecf8427e"',
    'commit = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"',
    "key = 'user:profile:settings:theme'",
    'TOKEN_PATTERN = r"[A-Za-z0-9_]{36}"',
    "if password == confirm_password:",
    "def check_password(self, raw_password: str) -> bool:",
    "# the token must be at least 16 characters long",
    "author = 'Jane Doe <jane@example.org>'",
    "secretary_name = 'Jane Doe'",
    'password = f"{prefix}{suffix_from_vault}"',
    "password = ''",
    "auth = ('user', password)",
    "Authorization: Bearer <token>",
    "Authorization: Bearer ${ACCESS_TOKEN}",
    "postgres://user:password@localhost/db",
    "https://user:${DB_PASSWORD}@db/app",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUF\n-----END CERTIFICATE-----",
    "ghp_short",
    "AKIA_NOT_A_KEY",
    "xox-not-slack",
    "sk-ant-",
    "eyJhbGciOiJIUzI1NiJ9 is only a header",
    "sk_test_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "integrity: sha512-" + "Q" * 10 + "+3Lh/dDk==",
    "const KEY_CODES = { ENTER: 13, ESCAPE: 27 };",
    "passwordless_login_enabled = true",
]


@pytest.mark.parametrize(("description", "text", "secrets"), POSITIVES, ids=[p[0] for p in POSITIVES])
def test_positives_are_masked(description: str, text: str, secrets: list[str]) -> None:
    masked, count = mask_secrets(text)
    assert count >= 1, description
    for secret in secrets:
        assert secret not in masked, f"{description}: {secret!r} survived in {masked!r}"
    assert MARKER in masked
    assert len(masked.splitlines()) == len(text.splitlines())


@pytest.mark.parametrize("text", NEGATIVES)
def test_negatives_are_left_alone(text: str) -> None:
    assert mask_secrets(text) == (text, 0)


def test_counts_each_secret_once() -> None:
    text = f"token={SECRET} secret={HEX_SECRET}\nGITHUB_TOKEN={'ghp_' + rand(36)}\n{pem(lines=2)}\n"
    masked, count = mask_secrets(text)
    assert count == 4
    assert masked.count(MARKER) >= 4


def test_surroundings_and_line_numbers_are_kept() -> None:
    block = pem(lines=5)
    text = f"import os\n\nKEY = '''\n{block}\n'''\npassword = '{SECRET}'\nprint(KEY)\n"
    masked, _ = mask_secrets(text)
    original_lines, masked_lines = text.splitlines(), masked.splitlines()
    assert len(masked_lines) == len(original_lines)
    for before, after in zip(original_lines, masked_lines, strict=True):
        if before in ("import os", "", "KEY = '''", "'''", "print(KEY)"):
            assert after == before
        else:
            assert after != before and MARKER in after
    assert masked_lines[-2] == f"password = '{MARKER}'"


def test_crlf_and_exotic_line_breaks_are_preserved() -> None:
    block = pem(lines=3).replace("\n", "\r\n")
    text = f"a = 1\r\n{block}\r\nsecret = '{SECRET}'\u2028b = 2\x0c"
    masked, count = mask_secrets(text)
    assert count == 2
    for brk in ("\r\n", "\r", "\n", "\u2028", "\x0c"):
        assert masked.count(brk) == text.count(brk)
    assert masked.splitlines() [0] == "a = 1"


def test_masking_is_stable() -> None:
    text = "\n".join(t for _, t, _ in POSITIVES)
    once, count = mask_secrets(text)
    assert count >= len(POSITIVES)
    assert mask_secrets(once) == (once, 0)


def test_name_and_value_rules() -> None:
    for name in ("password", "DB_PASSWORD", "dbPassword", "x-api-key", "apiKey", "client_secret", "AUTH",
                 "auth_token", "GITHUB_TOKEN", "accessToken", "pwd", "config.db.password", "--password",
                 "privateKey", "aws_secret_access_key", "credentials"):
        assert is_secret_name(name), name
    for name in ("tokenizer", "author", "max_tokens_total", "key", "cache_key", "bypass", "keyboard",
                 "monkey", "passenger_count"):
        assert not is_secret_name(name), name
    assert looks_random(SECRET) and looks_random(HEX_SECRET) and looks_random(AWS_SECRET)
    for value in ("get_password_from_env", "DJANGO_SECRET_KEY", "aaaaaaaaaaaaaaaaaaaa", "1234567890123456",
                  "https://example.org/token", "short"):
        assert not looks_random(value), value
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("abcd") == 2.0


def test_random_values_of_common_alphabets_are_mostly_caught() -> None:
    rng = random.Random(7)
    for alphabet in (ALNUM, "0123456789abcdef", B64, URLSAFE):
        values = ["".join(rng.choice(alphabet) for _ in range(32)) for _ in range(300)]
        caught = sum(looks_random(v) for v in values)
        assert caught >= 0.97 * len(values), alphabet


def test_large_and_pathological_inputs_finish() -> None:
    # Each of these would take minutes with a backtracking or quadratic scan.
    for text in ("a=" * 100_000, "key=" * 50_000, "password='" + "x" * 200_000,
                 "-----BEGIN RSA PRIVATE KEY-----\n" * 5_000, "eyJ" * 50_000, "a://b:" * 30_000,
                 "authorization: bearer " * 10_000, "+" * 200_000 + "token=" + "A1b2" * 50_000):
        masked, _ = mask_secrets(text)
        assert len(masked.splitlines()) == len(text.splitlines())


_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_PIECES = st.sampled_from([
    "password = ", "token=", "'", '"', ": ", "\n", "\r\n", "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----", "ghp_", "AKIA", "eyJ", ".", "sk-ant-", "xoxb-", "Authorization: Bearer ",
    "://u:", "@", "+", MARKER, SECRET, HEX_SECRET, AWS_SECRET, "\u2028", "\x85", "\udcff", "=",
])
_TEXT = st.lists(st.one_of(st.text(max_size=30), _PIECES), max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_never_raises_and_never_changes_line_structure(text: str) -> None:
    masked, count = mask_secrets(text)
    assert count >= 0
    assert len(masked.splitlines()) == len(text.splitlines())
    for brk in _LINE_BREAKS:
        assert masked.count(brk) == text.count(brk)
    assert (count == 0) == (masked == text)


@settings(max_examples=200, deadline=None)
@given(st.text(), st.text(), st.sampled_from(["ghp", "stripe", "assignment", "pem", "jwt"]))
def test_planted_secret_never_survives_arbitrary_surroundings(before: str, after: str, kind: str) -> None:
    secret = {"ghp": "ghp_" + SECRET + SECRET[:12], "stripe": "sk_live_" + SECRET,
              "assignment": SECRET, "pem": _rsa.splitlines()[2], "jwt": _jwt}[kind]
    line = {"assignment": f"api_key = '{SECRET}'", "pem": _rsa}.get(kind, secret)
    text = f"{before}\n{line}\n{after}"
    masked, count = mask_secrets(text)
    assert count >= 1
    assert secret not in masked.replace(before, "").replace(after, "") or secret in before + after


def test_a_key_body_without_its_begin_line_is_masked() -> None:
    import random
    import string

    rng = random.Random(7)
    body = ["".join(rng.choice(string.ascii_letters + string.digits + "+/") for _ in range(64)) for _ in range(3)]
    hunk = f"@@ -14,7 +14,7 @@ {body[0]}\n {body[1]}\n-{body[2]}\n+{body[2][::-1]}\n"
    masked, count = mask_secrets(hunk)
    assert count == 1
    assert not any(line in masked for line in [*body, body[2][::-1]])
    assert len(masked.splitlines()) == len(hunk.splitlines())


def test_lines_of_low_entropy_base64_alphabet_are_left_alone() -> None:
    text = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\nBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\n"
    assert mask_secrets(text) == (text, 0)
    one_line = "x = 'c2VjcmV0IHRleHQgdGhhdCBpcyBub3QgYSBrZXkgYXQgYWxs'\n"
    assert mask_secrets(one_line) == (one_line, 0)


def test_the_run_s_gate_masks_a_repeated_text_once_and_counts_it_each_time() -> None:
    """A file's patch goes out in its plan and again in its main loop (and one checklist in every file's first
    message): the gate masks it once, gives the same text, and counts its secrets each time it is sent, as
    before (the run's note counts secrets sent). More texts than it keeps are masked again, never wrongly."""
    from ocr_hook.agent.conversation import SecretMasker

    calls: list[str] = []

    def counted(text: str) -> tuple[str, int]:
        calls.append(text)
        return mask_secrets(text)

    gate = SecretMasker(counted)
    patch = 'token = "ghp_' + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8" + '"\n'
    first, second = gate(patch), gate("".join([patch]))  # an equal text, not the same object
    assert first == second == mask_secrets(patch)[0] and MARKER in first
    assert gate.count == 2 and calls == [patch]
    others = [f"x{i} = {i}\n" for i in range(100)]
    assert [gate(t) for t in others] == [mask_secrets(t)[0] for t in others]
    assert gate(patch) == first and gate.count == 3 and len(calls) == 102  # pushed out by the others: masked again
