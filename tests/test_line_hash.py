"""primaryLocationLineHash must equal what GitHub computes: the test vectors of
github/codeql-action's src/fingerprints.test.ts, reproduced here."""

from __future__ import annotations

import pytest

from ocr_hook.findings.line_hash import line_hash, line_hashes

GREETINGS_WITH_NEWLINE = [
    "e9496ae3ebfced30:1", "fb7c023a8b9ccb3f:1", "ce8ba1a563dcdaca:1", "e20e36e16fcb0cc8:1",
    "b3edc88f2938467e:1", "c8e28b0b4002a3a0:1", "c129715d7a2bc9a3:1",
]

VECTORS = [
    ("", ["c129715d7a2bc9a3:1"]),
    (" a\nb\n  \t\tc\n d", ["271789c17abda88f:1", "54703d4cd895b18:1", "180aee12dab6264:1", "a23a3dc5e078b07b:1"]),
    (" hello; \t\nworld!!!\n\n\n  \t\tGreetings\n End",
     ["8b7cf3e952e7aeb2:1", "b1ae1287ec4718d9:1", "bff680108adb0fcc:1", "c6805c5e1288b612:1",
      "b86d3392aea1be30:1", "e6ceba753e1a442:1"]),
    (" hello; \t\nworld!!!\n\n\n  \t\tGreetings\n End\n", GREETINGS_WITH_NEWLINE),
    (" hello; \t\nworld!!!\r\r\r  \t\tGreetings\r End\r", GREETINGS_WITH_NEWLINE),
    (" hello; \t\r\nworld!!!\r\n\r\n\r\n  \t\tGreetings\r\n End\r\n", GREETINGS_WITH_NEWLINE),
    (" hello; \t\nworld!!!\r\n\n\r  \t\tGreetings\r End\r\n", GREETINGS_WITH_NEWLINE),
    ("Lorem ipsum dolor sit amet.\n" * 10,
     ["a7f2ff13bc495cf2:1", "a7f2ff13bc495cf2:2", "a7f2ff13bc495cf2:3", "a7f2ff13bc495cf2:4",
      "a7f2ff13bc495cf2:5", "a7f2ff13bc495cf2:6", "a7f2ff1481e87703:1", "a9cf91f7bbf1862b:1",
      "55ec222b86bcae53:1", "cc97dc7b1d7d8f7b:1", "c129715d7a2bc9a3:1"]),
]


@pytest.mark.parametrize(("text", "expected"), VECTORS)
def test_codeql_action_vectors(text: str, expected: list[str]) -> None:
    assert line_hashes(text) == expected


def test_single_line_lookup() -> None:
    text = " hello; \t\nworld!!!\n\n\n  \t\tGreetings\n End\n"
    assert line_hash(text, 1) == "e9496ae3ebfced30:1"
    assert line_hash(text, 6) == "c8e28b0b4002a3a0:1"
    assert line_hash(text, 0) is None
    assert line_hash(text, 8) is None


def test_indentation_does_not_change_the_hash() -> None:
    assert line_hashes("if x:\n    y = 1\n") == line_hashes("if x:\n\t\ty = 1\n")


def test_undecodable_bytes_hash_like_the_replacement_character() -> None:
    # GitHub decodes files as UTF-8 with U+FFFD for bad bytes; we get them as surrogateescape.
    raw = b"caf\xe9 = 1\n"
    assert line_hashes(raw.decode("utf-8", "surrogateescape")) == line_hashes(raw.decode("utf-8", "replace"))


def test_characters_outside_the_bmp_count_as_two_code_units() -> None:
    # In JavaScript an emoji is two UTF-16 code units; a different pair must give a different hash.
    assert line_hashes("x = '\U0001f600'\n") != line_hashes("x = '\U0001f601'\n")
    assert len(line_hashes("\U0001f600\n" * 3)) == 4
