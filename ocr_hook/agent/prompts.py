"""The prompt texts (config/prompts/*.md) and how per-file values are filled into them."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from ocr_hook import config_files
from ocr_hook.digest import sha256

if TYPE_CHECKING:
    from ocr_hook.agent import FileGuidance
    from ocr_hook.changes.model import FileChange

PROMPT_FILES = (
    "system.md", "plan.md", "plan_last_round.md", "main.md", "checklist.md", "nudge.md",
    "final_round.md", "cut_off.md", "relocate_system.md", "relocate.md", "filter_system.md", "filter.md",
    "compact.md", "compact_notes.md", "guidance.md", "guidance_filter.md", "language.md", "rereview.md",
    "file_text.md", "new_file.md", "intent.md", "context_pack.md", "checks_system.md", "checks.md", "tickets.md",
)
# The list of other changed files is context; a huge change set should not crowd out the diff.
MAX_LISTED_FILES = 200

_BACKTICKS = re.compile(r"`{3,}")


def template(name: str) -> str:
    return config_files.read_text(f"prompts/{name}")


def render(name: str, **values: object) -> str:
    """Fill `$name` fields; the values may contain any text (braces, dollars) safely."""
    from string import Template  # here: a run answered from the cache renders no prompt (and string costs ~1 ms)

    from ocr_hook.changes.names import shown

    # A file's name as git shows it: a name that is not UTF-8 cannot go out as JSON otherwise.
    return Template(template(name)).substitute({k: shown(str(v)) if k == "path" else str(v) for k, v in values.items()})


def fence(text: str, info: str = "") -> str:
    """A Markdown code fence longer than any backtick run inside `text`, so data cannot close it early."""
    # (str's own search first: most text has no backtick run, and the pattern would scan every character)
    longest = max(map(len, _BACKTICKS.findall(text)), default=2) if "```" in text else 2
    marks = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{marks}{info}\n{body}{marks}"


@cache
def digest() -> str:
    """Hash of every prompt text: part of the result-cache key, so a reworded prompt re-reviews."""
    h = sha256()
    for name in PROMPT_FILES:
        h.update(name.encode())
        h.update(b"\0")
        h.update(template(name).encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def system_prompt() -> str:
    """Identical for every file and phase of a run, so the API can cache it once."""
    return template("system.md").strip()


def uses_language(language: str) -> bool:
    return bool(language.strip()) and language.strip().lower() not in ("english", "en")


def system_blocks(own: str, guidance: FileGuidance | None, language: str, *,
                  header: str = "guidance.md") -> list[dict[str, Any]]:
    """The system prompt as blocks: our instructions, then the part of the project's guidance every file
    shares (ending in the cache breakpoint, so all files of a run reuse one cached prefix), then this
    file's own guidance. Without guidance or a language it is one block, as before."""
    # Here, not at the top: a run answered from the cache hashes the prompts (digest) and sends none.
    from ocr_hook.agent.conversation import EPHEMERAL

    sections = guidance.sections if guidance is not None else ()
    shared = guidance.shared if guidance is not None else 0
    language_applies = uses_language(language) and header == "guidance.md"
    if not sections and not language_applies:
        return [{"type": "text", "text": own, "cache_control": EPHEMERAL}]
    parts = [template(header).strip()] if sections else []
    if language_applies:
        parts.append(render("language.md", language=language.strip()).strip())
    if sections[:shared]:
        parts.append("\n".join(sections[:shared]).strip())
    shared_text = "\n\n".join(parts)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": own},
                                    {"type": "text", "text": shared_text, "cache_control": EPHEMERAL}]
    if sections[shared:]:
        blocks.append({"type": "text", "text": "\n".join(sections[shared:]).strip()})
    return blocks


class OtherPaths(Sequence[str]):
    """Every path of the change set but one file's own, without copying the list for each file: at 30,000 files
    one copy per file was quadratic, some 30 s of a run (issue 55.12). Built from the run's one tuple and the
    file's index in it (None: not in it)."""

    __slots__ = ("_paths", "_skip")

    def __init__(self, paths: tuple[str, ...], skip: int | None) -> None:
        self._paths = paths
        self._skip = skip

    def __len__(self) -> int:
        return len(self._paths) - (self._skip is not None)

    def _at(self, i: int) -> str:
        return self._paths[i + 1 if self._skip is not None and i >= self._skip else i]

    def __getitem__(self, item: int | slice) -> Any:
        if isinstance(item, slice):
            return [self._at(i) for i in range(*item.indices(len(self)))]
        if not -len(self) <= item < len(self):
            raise IndexError(item)
        return self._at(item % len(self))


def other_files_list(paths: Sequence[str]) -> str:
    if not paths:
        return "(none: this is the only changed file)"
    from ocr_hook.changes.names import shown

    lines = [f"- {shown(p)}" for p in paths[:MAX_LISTED_FILES]]
    if len(paths) > MAX_LISTED_FILES:
        lines.append(f"- … and {len(paths) - MAX_LISTED_FILES} more")
    return "\n".join(lines)


def its_patch(change: FileChange, mask: Callable[[str], str]) -> str:
    """A file's patch as the model is sent it: the names in its header as git shows them (before the mask makes
    the text sendable, which would turn a name that is not UTF-8 into replacement characters), secrets masked."""
    from ocr_hook.changes.names import shown_patch

    return mask(shown_patch(change.patch, change.path, change.old_path))


def plan_message(path: str, status: str, changed_lines: int, diff: str, other_paths: Sequence[str],
                 rounds: int, context: str | None = None, intent: str | None = None) -> str:
    """`diff`: the file's patch as sent (its_patch)."""
    text = render("plan.md", path=path, status=status, changed_lines=changed_lines, rounds=rounds,
                  other_files=other_files_list(other_paths), diff=fence(diff, "diff"))
    return _with_context(text, context, intent)


def context_section(pack: str, count: int) -> str:
    """The context pack's part of a file's first message (DESIGN.md 12); `pack` is ContextPack.render()."""
    return render("context_pack.md", count=count, entries=pack).strip()


def _with_context(text: str, context: str | None, intent: str | None) -> str:
    """The author's intent (already fenced and labelled) and the context pack section after the rest."""
    for part in (intent, context):
        if part:
            text = text.rstrip("\n") + "\n\n" + part.strip() + "\n"
    return text


def main_message(path: str, status: str, changed_lines: int, diff: str | None, other_paths: Sequence[str],
                 rounds: int, checklist: str | None, file_text: tuple[str, str] | None = None,
                 context: str | None = None, intent: str | None = None) -> str:
    """`file_text`: the file's numbered lines and how much of it they are (see FileReview._opening_text);
    `diff` as plan_message takes it, None for a new file whose lines `file_text` shows whole (excerpt.
    repeats_new_file)."""
    checklist_text = render("checklist.md", checklist=fence(checklist)) if checklist else ""
    shown = fence(diff, "diff") if diff is not None else render("new_file.md", path=path).strip()
    text = render("main.md", path=path, status=status, changed_lines=changed_lines, rounds=rounds,
                  other_files=other_files_list(other_paths), diff=shown, checklist=checklist_text)
    if file_text is not None:
        lines, extent = file_text
        text = text.rstrip("\n") + "\n\n" + render("file_text.md", path=path, extent=extent,
                                                   lines=fence(lines)).strip() + "\n"
    return _with_context(text, context, intent)


def nudge(path: str) -> str:
    return render("nudge.md", path=path).strip()


def final_round(path: str) -> str:
    return render("final_round.md", path=path).strip()


def cut_off() -> str:
    return template("cut_off.md").strip()


def plan_last_round() -> str:
    return template("plan_last_round.md").strip()


def compact_request(path: str, words: int) -> str:
    return render("compact.md", path=path, words=words).strip()


def compact_notes(notes: str) -> str:
    return render("compact_notes.md", notes=notes).strip()
