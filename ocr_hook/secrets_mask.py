"""Mask high-confidence secrets in text before it is sent to the model.

Three kinds of evidence, from strongest to weakest:
1. private key blocks (PEM / OpenSSH / PGP), masked whole;
2. tokens whose format is published by their issuer (a fixed prefix and a fixed alphabet), masked
   wherever they appear;
3. a long random-looking literal assigned to a name that means "secret" (password, token, api_key,
   ...), in code, env files, JSON or YAML. Here both sides must agree: the name must say secret and
   the value must look generated (length, Shannon entropy, mixed characters, not an identifier, a
   path, a URL or a placeholder), so ordinary code is left alone.

Every mask keeps the text's line structure: line breaks are never removed or added, and each non-empty
line of a masked multi-line block stays non-empty. Line numbers quoted from the masked text therefore
point at the same lines of the original file.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

MARKER = "[MASKED-SECRET]"

# Every character str.splitlines() treats as a line boundary.
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_NON_BREAK_RUN = re.compile(f"[^{_LINE_BREAKS}]+")

# --- 1. private key blocks -------------------------------------------------------------------------

_PEM_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_MAX_BLOCK = 64 * 1024  # the largest real keys (RSA 16384, PGP with subkeys) are far smaller
# Without an END marker (a truncated hunk): the key body continues over lines of base64, optionally
# behind diff markers, quotes, comment characters or string concatenation.
_PEM_BODY_LINE = re.compile(
    r"[ \t+\-\"'`#/*]*+(?:(?:Proc-Type|DEK-Info|Comment|Version|Hash):.*|[A-Za-z0-9+/=]{8,}+)"
    r"[ \t\"'`,;+\\n]*+"
)
_NEXT_LINE = re.compile(f"(?:\r\n|[{_LINE_BREAKS}])([^{_LINE_BREAKS}]*)")
_REST_OF_LINE = re.compile(f"[^{_LINE_BREAKS}]*")

# --- 2. tokens with a published format ----------------------------------------------------------------

_E = r"(?![A-Za-z0-9_\-])"  # token end, for fixed-length formats
# One lookbehind and a first-character lookahead in front of the alternation keep the scan fast.
_KNOWN_TOKENS = re.compile(
    r"(?<![A-Za-z0-9_\-])(?=[Aagxsrne])(?:"
    + "|".join(
        [
            r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}" + _E,  # AWS access key id
            r"gh[pousr]_[A-Za-z0-9]{36,251}" + _E,  # GitHub classic tokens
            r"github_pat_[A-Za-z0-9_]{22,244}" + _E,  # GitHub fine-grained tokens
            r"glpat-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]+)*",  # GitLab personal access tokens
            r"xox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack
            r"[sr]k_live_[A-Za-z0-9]{16,}",  # Stripe live keys
            r"AIza[0-9A-Za-z_\-]{35}" + _E,  # Google API keys
            r"sk-(?:ant|proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}",  # Anthropic, OpenAI project keys
            r"sk-[A-Za-z0-9]{48}" + _E,  # OpenAI legacy keys
            r"npm_[A-Za-z0-9]{36}" + _E,  # npm
            # JWT: base64url of '{"' starts with eyJ; signature may be empty only for eyJ.eyJ. tokens.
            r"eyJ[A-Za-z0-9_\-]{5,}\.(?:eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*"
            r"|[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{10,})",
        ]
    )
    + ")"
)

# Every known token starts with one of these (lower-cased, as _sub_counting looks for them): only the lines
# holding one are searched, where the pattern above tried every letter of every line (issue 62.8).
_TOKEN_NEEDLES = ("akia", "asia", "abia", "acca", "a3t", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
                  "glpat-", "xox", "k_live_", "aiza", "sk-", "npm_", "eyj")

# --- 3. assignments of random-looking values to secret-looking names ---------------------------------------

_VALUE_MIN = 16
_VALUE_MAX = 4096
_ASSIGNMENT = re.compile(
    r"""
    (?<![A-Za-z0-9_])
    (?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,100}+)     # identifier, dotted path, env name, key, flag
    ["'`]?\]?                                       # end of a quoted key: "name": / ['name'] =
    (?:[ \t]*:[ \t]*[A-Za-z_][A-Za-z0-9_.\[\]|]{0,60}(?=[ \t]*=))?   # type annotation: name: str = ...
    [ \t]*(?::=|=>|=|:)[ \t]*
    (?:
        [rRbBuU]{0,2}(?P<quote>["'`])(?P<quoted>[^"'`\s\\]{16,4096}+)(?P=quote)
      | (?P<bare>[A-Za-z0-9+/_\-.~!@$%^&*]{16,4096}+={0,3})(?=[\s#;,)}\]]|$)
    )
    """,
    re.VERBOSE,
)
_AUTH_HEADER = re.compile(
    r"(?i)(?<![A-Za-z0-9_])(?=[ap])(?:authorization|proxy-authorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:bearer|token|basic)[ \t]+(?P<value>[A-Za-z0-9_\-.=+/~]{16,4096})"
)
_URL_PASSWORD = re.compile(
    r"(?<=[A-Za-z0-9+.\-])://[^\s:/@\"']{1,256}+:(?P<value>[^\s@/\"']{16,4096}+)@"
)

# Substrings of a name (lower-cased, separators removed) that say "this holds a secret".
_SECRET_NAME_PARTS = (
    "password", "passwd", "passphrase", "secret", "apikey", "accesskey", "privatekey", "clientsecret",
    "authtoken", "accesstoken", "refreshtoken", "credential", "signingkey", "encryptionkey",
)
# Whole words of a name that say so; as substrings they would match "tokenizer", "author", "bypass".
_SECRET_NAME_WORDS = frozenset({"token", "auth", "pwd", "pass", "pw"})
# Every secret name contains one of these (lower-cased): the assignment scan only visits such lines.
_NAME_NEEDLES = ("pass", "pw", "secret", "token", "key", "auth", "credential")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z]")
_PLACEHOLDER_PARTS = (
    "changeme", "change_me", "change-me", "example", "placeholder", "your_", "your-", "yourtoken",
    "yourkey", "yoursecret", "yourpassword", "dummy", "redacted", "sample", "insert", "replace", "fixme",
    "todo", "xxxx", "****", "....", "<", ">", "${", "{{", "}}", "%(", "$(", "masked",
)
_IDENTIFIER_PIECE = re.compile(r"[A-Za-z]+|[0-9]+")
_WORD_LENGTH = 3.0  # average letters per piece at or above which a value reads as words
# Letter pairs frequent in English words and the identifiers made from them. Random letters hit
# this set about one time in six; words and identifiers about every other pair or more.
_COMMON_BIGRAMS = frozenset(
    "ab ac ad ag ai al am an ap ar as at ay be ca ce ch ci ck cl co cr ct cu da de di do ds ea ec ed ee ef "
    "ei el em en ep er es et ex fa fe fi fo fr fu ga ge gi gr gu ha he hi id ie if ig il im in io ip ir is "
    "it iv ke ki la le li ll lo lu ly ma me mi mo mp na nc nd ne ng ni no ns nt nu ob oc od of og ol om on "
    "oo op or os ot ou ow pa pe pl po pr pu qu ra rd re ri rm rn ro rs rt ru ry sc se sh si sp ss st su "
    "ta tc te th ti to tr ty ue ul um un up ur us ut va ve vi wa we wh wi wo xt ze".split()
)
_WORDNESS = 0.4  # share of common pairs at or above which letter pieces read as words


def shannon_entropy(text: str) -> float:
    """Bits per character of the text's own character distribution."""
    if not text:
        return 0.0
    total = len(text)
    return -sum(count / total * math.log2(count / total) for count in Counter(text).values())


def is_secret_name(name: str) -> bool:
    """Whether an identifier, key or env name says it holds a secret."""
    last = name.strip("-.").split(".")[-1]  # config.db.password -> password
    squashed = re.sub(r"[^a-z0-9]", "", last.lower())
    if any(part in squashed for part in _SECRET_NAME_PARTS):
        return True
    spaced = _CAMEL.sub(lambda m: m.group()[0] + "_" + m.group()[1:], last)
    words = {word for word in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if word}
    return bool(words & _SECRET_NAME_WORDS)


def _looks_like_words(value: str) -> bool:
    """Identifiers and other word-made text: snake_case, CONSTANT_CASE, camelCase, dotted.paths,
    /file/paths, mime/types, a:b:c keys, or one plain word; not random text.

    The value is cut at punctuation and camelCase humps; words are long, carry vowels and few digits,
    while random text cut the same way leaves short, vowel-poor scraps.
    """
    spaced = _CAMEL.sub(lambda m: m.group()[0] + "_" + m.group()[1:], value)
    chunks = [chunk for chunk in re.split(r"[^A-Za-z0-9]+", spaced) if chunk]
    if len(chunks) <= 1:
        return bool(chunks) and chunks[0].isalpha()
    pieces = [piece for chunk in chunks for piece in _IDENTIFIER_PIECE.findall(chunk)]
    letters = [piece for piece in pieces if piece.isalpha()]
    if not letters:
        return False
    digits = sum(len(piece) for piece in pieces if piece.isdigit())
    letter_count = sum(map(len, letters))
    lowered = [piece.lower() for piece in letters]
    vowels = sum(piece.count(v) for piece in lowered for v in "aeiouy")
    unpronounceable = any(len(p) >= 5 and not any(v in p for v in "aeiouy") for p in lowered)
    pairs = [piece[i:i + 2] for piece in lowered for i in range(len(piece) - 1)]
    common = sum(pair in _COMMON_BIGRAMS for pair in pairs)
    return (
        letter_count / len(letters) >= _WORD_LENGTH
        and digits <= letter_count
        and vowels >= 0.2 * letter_count
        and not unpronounceable
        and common >= _WORDNESS * len(pairs)
    )


def looks_random(value: str) -> bool:
    """Whether a literal looks like a generated secret rather than a word, name, path or placeholder."""
    if not _VALUE_MIN <= len(value) <= _VALUE_MAX or any(c.isspace() for c in value):
        return False
    lowered = value.lower()
    if MARKER.lower() in lowered or any(part in lowered for part in _PLACEHOLDER_PARTS):
        return False
    if value.startswith(("$", "%", "@", "&", "*")) or "://" in value:
        return False
    # Brackets and braces mark patterns and templates; generated tokens do not use them.
    if value.isdigit() or len(set(value)) < 6 or any(c in value for c in "[]{}()"):
        return False
    if _looks_like_words(value):
        return False
    classes = sum(bool(re.search(pattern, value)) for pattern in (r"[a-z]", r"[A-Z]", r"[0-9]", r"[^A-Za-z0-9]"))
    if classes < 2:
        return False
    # Random hex averages ~3.4 bits per character at 16 characters and ~3.7 at 32; a short string
    # cannot show much variety, so its bar is lower. Repeats and near-repeats stay below either.
    return shannon_entropy(value) >= (2.5 if len(value) < 24 else 3.0)


# --- masking -----------------------------------------------------------------------------------------------


def _blank(block: str) -> str:
    """The marker in place of every non-empty line piece of `block`, keeping all line breaks."""
    return _NON_BREAK_RUN.sub(MARKER, block)


def _mask_pem_blocks(text: str) -> tuple[str, int]:
    pieces: list[str] = []
    count = 0
    position = 0
    next_end = _PEM_END.search(text)  # reused while ahead of us, so many BEGINs stay linear
    while True:
        begin = _PEM_BEGIN.search(text, position)
        if begin is None:
            break
        if next_end is not None and next_end.start() < begin.end():
            next_end = _PEM_END.search(text, begin.end())
        if next_end is not None and next_end.start() - begin.end() <= _PEM_MAX_BLOCK:
            stop = next_end.end()
        else:
            # No END marker (a truncated hunk): the rest of the line and the base64 lines after it.
            stop = _REST_OF_LINE.match(text, begin.end()).end()
            while (line := _NEXT_LINE.match(text, stop)) is not None:
                body = line.group(1)
                if body.strip() and not _PEM_BODY_LINE.fullmatch(body):
                    break
                stop = line.end()
        pieces.append(text[position:begin.start()])
        pieces.append(_blank(text[begin.start():stop]))
        count += 1
        position = stop
    pieces.append(text[position:])
    return "".join(pieces), count


# A key body seen without its BEGIN line (a hunk from the middle of a key file): two or more
# consecutive lines that are nothing but 40-80 characters of random-looking base64, optionally behind
# diff markers, indentation, quotes or comment characters.
_BASE64_LINE_RUN = re.compile(
    # Possessive everywhere: a long line of '+' or base64 must fail in linear time. A hunk header
    # may carry a body line as its function context (git takes the last line starting with a letter).
    r"^(?:(?:@@ [^@\r\n]*+@@ )?[+\- ]?[ \t]*+(?:[\"'`#*]|//)*+[ \t]*+"
    r"[A-Za-z0-9+/]{40,80}+={0,2}[ \t\"'`,;+\\n]*+(?:\r?\n|\Z)){2,}",
    re.MULTILINE,
)
_BASE64_CORE = re.compile(r"[A-Za-z0-9+/]{40,80}")
_BASE64_MIN_ENTROPY = 4.5  # bits per character; random base64 sits near 5.5, prose and code far below


def _mask_key_bodies(text: str) -> tuple[str, int]:
    def body(match: re.Match[str]) -> str | None:
        lines = [_BASE64_CORE.search(line) for line in match.group(0).splitlines()]
        if all(core and shannon_entropy(core.group(0)) >= _BASE64_MIN_ENTROPY for core in lines):
            return _blank(match.group(0))
        return None

    return _sub_counting(_BASE64_LINE_RUN, text, body, ())


def _windows(text: str, lowered: str, needles: tuple[str, ...]) -> list[tuple[int, int]]:
    """Sorted, disjoint spans of the '\\n'-delimited lines of `text` that contain any needle."""
    spans: list[tuple[int, int]] = []
    for needle in needles:
        position = lowered.find(needle)
        while position != -1:
            start = text.rfind("\n", 0, position) + 1
            end = text.find("\n", position)
            end = len(text) if end == -1 else end
            spans.append((start, end))
            position = lowered.find(needle, end)
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _sub_counting(pattern: re.Pattern[str], text: str, replace: Callable[[re.Match[str]], str | None],
                  needles: tuple[str, ...] = ()) -> tuple[str, int]:
    """pattern.sub with a replacement that may decline (None); only on lines holding a needle, if given.

    No pattern matches across a line break, so scanning just the lines that contain a literal the
    match needs gives the same result as scanning everything, several times faster.
    """
    count = 0

    def one(match: re.Match[str]) -> str:
        nonlocal count
        replacement = replace(match)
        if replacement is None:
            return match.group()
        count += 1
        return replacement

    lowered = text.lower()
    # A few characters (e.g. U+0130) lower-case to two; then offsets would not line up: scan it all.
    if not needles or len(lowered) != len(text):
        return pattern.sub(one, text), count
    pieces: list[str] = []
    done = 0
    for start, end in _windows(text, lowered, needles):
        pieces.append(text[done:start])
        pieces.append(pattern.sub(one, text[start:end]))
        done = end
    pieces.append(text[done:])
    return "".join(pieces), count


def _replace_group(match: re.Match[str], group: str) -> str:
    start, end = match.span(group)
    whole_start = match.start()
    text = match.group()
    return text[: start - whole_start] + MARKER + text[end - whole_start:]


def _assignment(match: re.Match[str]) -> str | None:
    group = "quoted" if match.group("quoted") is not None else "bare"
    if not is_secret_name(match.group("name")) or not looks_random(match.group(group)):
        return None
    return _replace_group(match, group)


def _random_value(match: re.Match[str]) -> str | None:
    return _replace_group(match, "value") if looks_random(match.group("value")) else None


def mask_secrets(text: str) -> tuple[str, int]:
    """`text` with high-confidence secrets replaced by MARKER, and how many were masked."""
    text, total = _mask_pem_blocks(text)
    text, bodies = _mask_key_bodies(text)
    total += bodies
    for pattern, replace, needles in (
        (_KNOWN_TOKENS, lambda m: MARKER, _TOKEN_NEEDLES),
        (_AUTH_HEADER, _random_value, ("authorization",)),
        (_URL_PASSWORD, _random_value, ("://",)),
        (_ASSIGNMENT, _assignment, _NAME_NEEDLES),
    ):
        text, count = _sub_counting(pattern, text, replace, needles)
        total += count
    return text, total
