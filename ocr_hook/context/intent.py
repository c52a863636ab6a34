"""What the change is for (DESIGN.md section 12): `--intent TEXT|@FILE`, the MCP `review` tool's
`intent`, the pull or merge request's title and body from the CI environment, or the commit messages
of the reviewed range. Capped, secrets masked, fenced and labelled as the author's words: data for
the reviewer, never instructions, and never shown to the review filter.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING

from ocr_hook.errors import ConfigError

if TYPE_CHECKING:
    from ocr_hook.changes.model import ChangeSet

MAX_INTENT_TOKENS = 1_000
MAX_COMMITS = 30
MAX_FILE_BYTES = 1_000_000


def read_flag(value: str) -> str:
    """`--intent TEXT`, or `--intent @FILE` (the file's text; `@@…` is the literal text `@…`)."""
    if value.startswith("@@"):
        return value[1:]
    if not value.startswith("@"):
        return value
    path = value[1:]
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"--intent @{path}: cannot read the file: {exc.strerror or exc}") from None
    return data[:MAX_FILE_BYTES].decode("utf-8", "replace")


def from_ci(environ: Mapping[str, str]) -> str | None:
    """The pull or merge request's title and body, where the CI system gives them."""
    from ocr_hook.cienv import request_text

    return request_text(environ)


def from_commits(repo_root: str, change_set: ChangeSet) -> str | None:
    """Subjects and bodies of the reviewed range's commits (newest first, merges left out); None for
    staged changes (their message is not written yet)."""
    from ocr_hook.changes import git
    from ocr_hook.errors import GitError

    if change_set.target is None:
        return None
    empty_tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    spec = [change_set.target] if change_set.base == empty_tree else [f"{change_set.base}..{change_set.target}"]
    try:
        out = git.git_text(repo_root, ["log", "--no-merges", f"-n{MAX_COMMITS}", "--format=%B%x00", *spec, "--"])
    except GitError:
        return None
    messages = [m.strip() for m in out.split("\0") if m.strip()]
    if not messages:
        return None
    if len(messages) == 1:
        return messages[0]
    return "\n\n".join(f"Commit {i}: {m}" for i, m in enumerate(messages, start=1))


def gather(explicit: str | None, environ: Mapping[str, str], repo_root: str, change_set: ChangeSet,
           scope_kind: str) -> tuple[str, str] | None:
    """(text, where it came from): the explicit intent, else the request's description in CI, else the
    commit messages of a --base/--push/--commit/--from..--to range."""
    if explicit is not None and explicit.strip():
        return explicit, "given with the review"
    request = from_ci(environ) if scope_kind in ("base", "push", "range", "commit") else None
    if request:
        return request, "the pull request's title and description"
    if scope_kind in ("base", "push", "range", "commit"):
        commits = from_commits(repo_root, change_set)
        if commits:
            return commits, "the commit messages of the reviewed range"
    return None


@lru_cache(maxsize=8)
def render(text: str, source: str = "given with the review") -> tuple[str, int]:
    """The intent as sent: capped to about MAX_INTENT_TOKENS, secrets masked, fenced and labelled;
    and how many secrets were masked."""
    from ocr_hook import config_files
    from ocr_hook.context import _fence
    from ocr_hook.secrets_mask import mask_secrets

    clean = "".join(ch for ch in text.replace("\r\n", "\n") if ch in "\n\t" or ch.isprintable()).strip()
    # Masked first, then cut: a secret across the cut would otherwise be sent in part, unrecognised.
    masked, count = mask_secrets(clean)
    limit = MAX_INTENT_TOKENS * 3  # bytes: the same 3 bytes a token as the budget's estimate
    cut = ""
    encoded = masked.encode("utf-8")
    if len(encoded) > limit:
        masked = encoded[:limit].decode("utf-8", "ignore").rstrip()
        cut = f"\n[cut here: the description is {len(clean.encode('utf-8')):,} bytes; the first {limit:,} are shown]"
    label = config_files.read_text("prompts/intent.md").strip().replace("$source", source)
    return f"{label}\n{_fence(masked + cut)}", count
