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
REQUEST_SHARE = 0.6  # of the cap, the most a pull request's title and body take when its commits follow


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


def commit_messages(repo_root: str, change_set: ChangeSet) -> list[str]:
    """Messages of the reviewed range's commits (newest first, merges left out); none for staged changes
    (their message is not written yet)."""
    from ocr_hook.changes import git
    from ocr_hook.errors import GitError

    if change_set.target is None:
        return []
    empty_tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    spec = [change_set.target] if change_set.base == empty_tree else [f"{change_set.base}..{change_set.target}"]
    try:
        out = git.git_text(repo_root, ["log", "--no-merges", f"-n{MAX_COMMITS}", "--format=%B%x00", *spec, "--"])
    except GitError:
        return []
    return [m.strip() for m in out.split("\0") if m.strip()]


def from_commits(repo_root: str, change_set: ChangeSet) -> str | None:
    """Subjects and bodies of the reviewed range's commits, numbered when there are several."""
    return _commits_text(commit_messages(repo_root, change_set))


def _commits_text(messages: list[str], subjects_only: bool = False) -> str | None:
    if subjects_only:
        messages = [m.split("\n", 1)[0] for m in messages]
    if not messages:
        return None
    if len(messages) == 1:
        return messages[0]
    return ("\n" if subjects_only else "\n\n").join(f"Commit {i}: {m}" for i, m in enumerate(messages, start=1))


def _combined(request: str, messages: list[str]) -> str:
    """The request's title and body, then the range's commits, within the cap together: the request takes at
    most REQUEST_SHARE of it (a long body must not push the commits out) and the commits fall back to their
    subjects when their bodies do not fit. Masked here, before anything is cut (render masks again, to no
    effect)."""
    from ocr_hook.secrets_mask import mask_secrets

    limit = MAX_INTENT_TOKENS * 3
    masked_request = _cut(mask_secrets(request.strip())[0], int(limit * REQUEST_SHARE), "the description")
    left = limit - len(masked_request.encode("utf-8")) - 40
    commits = mask_secrets(_commits_text(messages) or "")[0]
    if len(commits.encode("utf-8")) > left:
        commits = _cut(mask_secrets(_commits_text(messages, subjects_only=True) or "")[0], left, "the subjects")
    return f"{masked_request}\n\nThe commits of the range:\n{commits}"


def _cut(text: str, limit: int, what: str) -> str:
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    kept = encoded[:max(0, limit - 80)].decode("utf-8", "ignore").rstrip()
    return f"{kept}\n[{what} cut here: {len(encoded):,} bytes]"


def gather(explicit: str | None, environ: Mapping[str, str], repo_root: str, change_set: ChangeSet,
           scope_kind: str) -> tuple[str, str] | None:
    """(text, where it came from): the explicit intent, else for a --base/--push/--commit/--from..--to range
    the request's title and description in CI followed by the range's commit messages (either alone when
    the other is missing)."""
    if explicit is not None and explicit.strip():
        return explicit, "given with the review"
    if scope_kind not in ("base", "push", "range", "commit"):
        return None
    request = from_ci(environ)
    messages = commit_messages(repo_root, change_set)
    if request and messages:
        return _combined(request, messages), "the pull request's title and description, then its commit messages"
    if request:
        return request, "the pull request's title and description"
    commits = _commits_text(messages)
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
