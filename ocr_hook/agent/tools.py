"""The four read-only context tools: file_read, file_read_diff, file_find, code_search.

Every tool reads the reviewed snapshot (index or target commit) through ToolContext, never the
working tree. Paths from the model are confined before they reach the snapshot: no absolute
paths, no `..`, nothing under `.git`. Symbolic links are never followed: the snapshot serves only
regular files. Outputs are capped so one call cannot flood the conversation, and every refusal
says what was wrong and how to call the tool instead. task_done and code_comment are acted on by
the agent loop itself.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable, Mapping
from typing import Any

from ocr_hook.agent.tool_api import ToolContext, ToolResult
from ocr_hook.changes.model import FileChange, FileStatus
from ocr_hook.changes.snapshot_api import GrepHit
from ocr_hook.secrets_mask import mask_secrets

FILE_NOT_FOUND = "// The file was not found"

MAX_READ_LINES = 500
MAX_READ_CHARS = 60_000
MAX_READ_LINE_CHARS = 2_000
MAX_FIND_RESULTS = 100
MAX_HITS_PER_FILE = 100
MAX_SEARCH_LINES = 400
MAX_SEARCH_CHARS = 40_000
MAX_HIT_CHARS = 500
MAX_DIFF_CHARS = 60_000
GREP_TIMEOUT_S = 10.0

_BINARY_PROBE = 8_000  # bytes git itself inspects for a NUL to call a blob binary
_MAX_LISTED_PATHS = 40
_PATHSPEC_MAGIC = frozenset({"exclude", "glob", "icase", "literal", "top"})
_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


class _Refused(Exception):
    """A tool input we will not act on; the message goes back to the model."""


ContextTool = Callable[[Mapping[str, Any], ToolContext], ToolResult]


def run_context_tool(name: str, tool_input: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Run one context tool on input that registry.validate_input accepted."""
    tool = CONTEXT_TOOLS.get(name)
    if tool is None:
        raise ValueError(f"{name!r} is not a context tool; the agent loop handles it")
    try:
        result = tool(tool_input, ctx)
    except _Refused as refusal:
        result = ToolResult(str(refusal), is_error=True)
    return result._replace(text=_model_safe(result.text))


# --- file_read ---------------------------------------------------------------------------------


def file_read(tool_input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    path = _confine_path(tool_input.get("file_path"), ctx)
    start = _line_number(tool_input.get("start_line", 1), "start_line")
    end_arg = tool_input.get("end_line")
    end = start + MAX_READ_LINES - 1 if end_arg is None else _line_number(end_arg, "end_line")
    if end < start:
        raise _Refused(f"end_line ({end}) is before start_line ({start}); {_READ_EXAMPLE}")

    if _is_hidden(path, ctx):
        return ToolResult(f"`{path}` {_WITHHELD}", is_error=True)
    if _is_symlink(path, ctx):
        return _symlink(path, ctx)
    data = ctx.snapshot.read_bytes(path)
    if data is None:
        return _too_large(path, ctx) or _unreadable(path, ctx)
    if b"\0" in data[:_BINARY_PROBE]:
        return ToolResult(f"`{path}` is a binary file ({len(data)} bytes); its content cannot be shown.", True)
    # Masked as a whole file: a range cut from the middle of a key block no longer shows it is one.
    masked_text, secrets = _masked_text(data)
    lines = _split_lines(masked_text)
    plain = _split_lines(data.decode("utf-8", errors="replace")) if secrets else lines
    total = len(lines)
    if total == 0:
        return ToolResult(f"`{path}` is empty (0 lines).")
    if start > total:
        return ToolResult(
            f"start_line {start} is past the end of `{path}`, which has {total} lines. "
            f"Call file_read again with start_line between 1 and {total}.",
            is_error=True,
        )

    last = min(end, start + MAX_READ_LINES - 1, total)
    limit = _limit(MAX_READ_CHARS, ctx)
    out: list[str] = []
    size = 0
    shown_last = start - 1
    for number in range(start, last + 1):
        text = lines[number - 1]
        if len(text) > MAX_READ_LINE_CHARS:
            text = f"{text[:MAX_READ_LINE_CHARS]}… [line cut: {len(text) - MAX_READ_LINE_CHARS} more characters]"
        row = f"{number}|{text}"
        if out and size + len(row) + 1 > limit:
            break
        out.append(row)
        size += len(row) + 1
        shown_last = number

    notes = []
    if shown_last < last:
        notes.append(
            f"[Output cut at line {shown_last} to stay under {limit} characters; "
            f"`{path}` has {total} lines. Continue with start_line {shown_last + 1}.]"
        )
    elif last < min(end, total):
        notes.append(
            f"[Lines {start}-{last} of {total} shown: file_read returns at most {MAX_READ_LINES} lines "
            f"per call. Continue with start_line {last + 1}.]"
        )
    masked = sum(1 for n in range(start, shown_last + 1) if plain[n - 1] != lines[n - 1])
    return ToolResult("\n".join(out + notes), masked=masked)


def _limit(own: int, ctx: ToolContext) -> int:
    """A tool's character limit, lowered to what the model's side keeps of one result (ToolContext.result_chars)."""
    return own if ctx.result_chars is None else min(own, ctx.result_chars)


_READ_EXAMPLE = 'call it like {"file_path": "src/app/main.py", "start_line": 1, "end_line": 200}'


def _masked_text(data: bytes) -> tuple[str, int]:
    """A file's text with its secrets masked in the context of the whole file (masking keeps every
    line break, so line numbers stay those of the file), and how many secrets were masked."""
    return mask_secrets(data.decode("utf-8", errors="replace"))


def _line_number(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise _Refused(f"{name} must be a whole number, received {json.dumps(value)}; {_READ_EXAMPLE}")
    if value < 1:
        raise _Refused(f"{name} must be 1 or more (lines count from 1), received {int(value)}")
    return int(value)


def _split_lines(text: str) -> list[str]:
    # Only "\n" ends a line, as for git and the diff's line numbers (str.splitlines also splits
    # on form feeds and Unicode separators, which would shift every later number).
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


_WITHHELD = "is a sensitive file (it may hold secrets); its content is never sent for review."


def _is_hidden(path: str, ctx: ToolContext) -> bool:
    """Sensitive files (keys, .env, credentials) never leave the machine, not even as context."""
    return ctx.is_hidden(path)


def _is_symlink(path: str, ctx: ToolContext) -> bool:
    change = _change_for(path, ctx)
    if change is not None and change.path == path and change.is_symlink:
        return True
    return ctx.snapshot.is_symlink(path)


def _symlink(path: str, ctx: ToolContext) -> ToolResult:
    """A link is reported with its target text, never followed: the target may lie outside the repo."""
    blob = ctx.snapshot.read_bytes(path)
    target = blob.decode("utf-8", errors="replace").strip() if blob is not None else ""
    head = f"`{path}` is a symbolic link" + (f" to `{target}`" if target else "")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target)) if target else ""
    if not target or target.startswith("/") or resolved == ".." or resolved.startswith("../"):
        where = "which points outside the repository" if target else "whose target is unknown"
        return ToolResult(f"{head}, {where}. Links are never followed, so there is no content to show.", True)
    return ToolResult(
        f"{head}. Links are never followed; to read the file it points to, call file_read with "
        f'{{"file_path": "{resolved}"}}.',
        is_error=True,
    )


def _too_large(path: str, ctx: ToolContext) -> ToolResult | None:
    """A file over max_file_bytes is never read whole (issue 62.4): the model is told so, and how to see parts."""
    size = ctx.snapshot.oversize(path)
    if size is None:
        return None
    return ToolResult(f"`{path}` has {size} bytes, more than the review reads of one file (max_file_bytes), so "
                      "its content is not shown, and code_search does not search it either.", is_error=True)


def _unreadable(path: str, ctx: ToolContext) -> ToolResult:
    """Why the snapshot has no regular file at `path`, and what to do instead."""
    change = _change_for(path, ctx)
    if change is not None and change.status == FileStatus.DELETED:
        return ToolResult(
            f"`{path}` is deleted by this change, so the reviewed snapshot has no content for it. "
            f'Its removed lines are in its diff: file_read_diff with {{"path_array": ["{path}"]}}.',
            is_error=True,
        )
    if change is not None and change.path != path:
        return ToolResult(
            f'`{path}` was renamed to `{change.path}` by this change: call file_read with '
            f'{{"file_path": "{change.path}"}}.',
            is_error=True,
        )
    all_paths = ctx.snapshot.paths()
    if path in all_paths:
        return ToolResult(
            f"`{path}` is a symbolic link or a submodule in the reviewed snapshot, not a regular file, "
            "so it has no content to show (links are never followed). Read the file it points to "
            "by its own repository path instead.",
            is_error=True,
        )
    prefix = f"{path.rstrip('/')}/"
    inside = [p for p in all_paths if p.startswith(prefix)]
    if inside:
        listing = "\n".join(inside[:_MAX_LISTED_PATHS])
        more = f"\n(and {len(inside) - _MAX_LISTED_PATHS} more)" if len(inside) > _MAX_LISTED_PATHS else ""
        return ToolResult(
            f"`{path}` is a directory, not a file. Files in it:\n{listing}{more}\n"
            "Call file_read with one of these paths.",
            is_error=True,
        )
    basename = posixpath.basename(path)
    return ToolResult(
        f"The file `{path}` was not found in the reviewed snapshot. Paths are relative to the "
        f'repository root. To locate it by name call file_find with {{"query_name": "{basename}"}}.',
        is_error=True,
    )


# --- file_read_diff ----------------------------------------------------------------------------


def file_read_diff(tool_input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    requested = tool_input.get("path_array")
    if not isinstance(requested, list) or not all(isinstance(p, str) for p in requested):
        raise _Refused('path_array must be a list of paths, like {"path_array": ["src/api/handler.py"]}')
    chosen: dict[str, FileChange] = {}
    withheld: list[str] = []
    for raw in requested:
        try:
            path = _confine_path(raw, ctx)
        except _Refused:
            continue  # cannot be part of the change set; left out like any other stranger
        change = _change_for(path, ctx)
        if change is None:
            continue
        if _is_hidden(change.path, ctx) or (change.old_path is not None and _is_hidden(change.old_path, ctx)):
            if change.path not in withheld:
                withheld.append(change.path)
        else:
            chosen.setdefault(change.path, change)
    note = f"[Not shown: {', '.join(withheld)}: sensitive files, never sent for review.]" if withheld else ""
    if not chosen and note:
        return ToolResult(note, is_error=True)
    if not chosen:
        changed = [f.path for f in ctx.change_set.files]
        listing = ", ".join(changed[:_MAX_LISTED_PATHS])
        if len(changed) > _MAX_LISTED_PATHS:
            listing += f" (and {len(changed) - _MAX_LISTED_PATHS} more)"
        return ToolResult(
            f"None of the requested paths is part of this change: {', '.join(map(str, requested))}. "
            f"The files changed in this change are: {listing or '(none)'}."
        )

    parts: list[str] = []
    left_out: list[str] = []
    budget = limit = _limit(MAX_DIFF_CHARS, ctx)
    for change in chosen.values():
        patch = change.patch if change.patch.strip() else _no_text_diff(change)
        patch = patch if patch.endswith("\n") else patch + "\n"
        if len(patch) <= budget:
            parts.append(patch)
            budget -= len(patch)
        elif not parts:
            parts.append(
                f"{patch[:budget]}\n[Diff of `{change.path}` cut after {budget} of {len(patch)} characters.]\n"
            )
            budget = 0
        else:
            left_out.append(change.path)
    if left_out:
        parts.append(
            f"[Not shown, to keep this answer under {limit} characters: {', '.join(left_out)}. "
            "Ask for them in a separate call.]\n"
        )
    if note:
        parts.append(note)
    return ToolResult("".join(parts).rstrip("\n"))


def _no_text_diff(change: FileChange) -> str:
    kind = "binary file" if change.is_binary else "no textual changes"
    modes = f", mode {change.old_mode} -> {change.new_mode}" if change.old_mode != change.new_mode else ""
    renamed = f" (from `{change.old_path}`)" if change.old_path and change.old_path != change.path else ""
    return f"`{change.path}`{renamed}: {change.status}, {kind}{modes}.\n"


def _change_for(path: str, ctx: ToolContext) -> FileChange | None:
    for change in ctx.change_set.files:
        if change.path == path:
            return change
    for change in ctx.change_set.files:
        if change.old_path == path:
            return change
    return None


# --- file_find ---------------------------------------------------------------------------------


def file_find(tool_input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    query = tool_input.get("query_name")
    if not isinstance(query, str) or not query.strip():
        raise _Refused('query_name must be part of a file name, like {"query_name": "user_service"}')
    query = query.strip().removeprefix("./").lstrip("/")
    fold: Callable[[str], str] = (lambda s: s) if tool_input.get("case_sensitive", False) else str.casefold
    needle = fold(query)
    whole_path = "/" in query

    exact: list[str] = []
    partial: list[str] = []
    for path in ctx.snapshot.paths():
        name = fold(posixpath.basename(path))
        haystack = fold(path) if whole_path else name
        if needle in haystack:
            (exact if name == needle else partial).append(path)
    matches = exact + partial  # an exact name first: the likeliest target
    if not matches:
        return ToolResult(FILE_NOT_FOUND)
    shown = matches[:MAX_FIND_RESULTS]
    from ocr_hook.changes.names import shown as as_git_shows

    text = "\n".join(map(as_git_shows, shown))  # a name that is not UTF-8 quoted as the prompts quote it
    if len(matches) > len(shown):
        text += (
            f"\n[{len(shown)} of {len(matches)} matching files shown; "
            "use a longer query_name to narrow the list.]"
        )
    return ToolResult(text)


# --- code_search -------------------------------------------------------------------------------


def code_search(tool_input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    pattern = tool_input.get("search_text")
    if not isinstance(pattern, str) or pattern == "":
        raise _Refused('search_text must be a non-empty regular expression, like {"search_text": "load_config"}')
    raw_specs = tool_input.get("file_patterns") or []
    if not isinstance(raw_specs, list) or not all(isinstance(s, str) for s in raw_specs):
        raise _Refused('file_patterns must be a list of git pathspecs, like ["*.py", ":(exclude)tests/"]')
    if "\0" in pattern or any("\0" in spec for spec in raw_specs):  # git takes no NUL in an argument
        raise _Refused("search_text and file_patterns cannot contain a NUL character; search for the text "
                       'around it, like {"search_text": "load_config"}')
    pathspecs = tuple(_check_pathspec(spec) for spec in raw_specs)
    case_sensitive = bool(tool_input.get("case_sensitive", False))
    perl = bool(tool_input.get("use_perl_regexp", False))

    found = ctx.snapshot.grep(
        pattern,
        pathspecs,
        ignore_case=not case_sensitive,
        perl_regexp=perl,
        max_per_file=MAX_HITS_PER_FILE,
        timeout_s=GREP_TIMEOUT_S,
    )
    if found.error:
        hint = "" if perl else " Without use_perl_regexp the text is a basic regular expression."
        return ToolResult(f"code_search could not run: {found.error}.{hint}", is_error=True)
    hits = [hit for hit in found.hits if not _is_hidden(hit.path, ctx)]
    hidden_hits = len(found.hits) - len(hits)
    hidden_note = f"[{hidden_hits} matches in sensitive files are not shown.]" if hidden_hits else ""
    where = f" in {', '.join(pathspecs)}" if pathspecs else ""
    if not hits:
        mode = "case-sensitive" if case_sensitive else "case-insensitive"
        syntax = "Perl regular expression" if perl else "basic regular expression"
        return ToolResult(
            f"No matches for {json.dumps(pattern, ensure_ascii=False)}{where} in the reviewed snapshot "
            f"({mode}, {syntax}).{' ' + hidden_note if hidden_note else ''}"
            + "".join(f" {note}" for note in _not_searched(found.too_large, pathspecs, ctx))
        )

    from ocr_hook.changes.names import shown as shown_name

    out: list[str] = []
    size = 0
    limit = _limit(MAX_SEARCH_CHARS, ctx)
    masked_line = _MaskedLines(ctx)
    masked = 0
    for hit in hits:
        text = masked_line(hit)
        masked += text != hit.text
        text = text if len(text) <= MAX_HIT_CHARS else f"{text[:MAX_HIT_CHARS]}…"
        row = f"{shown_name(hit.path)}:{hit.line_no}:{text}"
        if len(out) >= MAX_SEARCH_LINES or size + len(row) + 1 > limit:
            break
        out.append(row)
        size += len(row) + 1
    if len(out) < len(hits):
        out.append(
            f"[Output cut after {len(out)} of {len(hits)} matches (limit: {MAX_SEARCH_LINES} lines or "
            f"{limit} characters). Narrow the search with file_patterns or a more specific "
            "search_text.]"
        )
    truncated = [path for path in found.truncated_files if not _is_hidden(path, ctx)]
    out += _not_searched(found.too_large, pathspecs, ctx)
    if truncated:
        out.append(f"[Only the first {MAX_HITS_PER_FILE} matches are shown for: {', '.join(truncated)}.]")
    if hidden_note:
        out.append(hidden_note)
    return ToolResult("\n".join(out), masked=masked)


def _not_searched(too_large: tuple[str, ...], pathspecs: tuple[str, ...], ctx: ToolContext) -> list[str]:
    """A note naming the files too large to search (git would load each whole), those the patterns point at."""
    from fnmatch import fnmatchcase

    def pointed(path: str) -> bool:  # roughly as git matches a pattern: enough to name the likely files
        return not pathspecs or any(path.startswith(s.rstrip("/") + "/") or fnmatchcase(path, s) or
                                    fnmatchcase(posixpath.basename(path), s) for s in pathspecs)

    named = [p for p in too_large if not _is_hidden(p, ctx) and pointed(p)]
    if not named:
        return []
    from ocr_hook.changes.names import shown as shown_name

    more = f" and {len(named) - _MAX_LISTED_PATHS} more" if len(named) > _MAX_LISTED_PATHS else ""
    return [f"[Not searched, larger than max_file_bytes: {', '.join(map(shown_name, named[:_MAX_LISTED_PATHS]))}"
            f"{more}.]"]


class _MaskedLines:
    """A hit's line as whole-file masking shows it. A grep hit is one line out of context: a line
    from the middle of a key block does not look like a secret on its own."""

    def __init__(self, ctx: ToolContext) -> None:
        self._ctx = ctx
        self._files: dict[str, tuple[list[str], list[str]] | None] = {}

    def __call__(self, hit: GrepHit) -> str:
        if hit.path not in self._files:
            data = self._ctx.snapshot.read_bytes(hit.path)
            if data is None and self._ctx.snapshot.oversize(hit.path) is not None:
                return mask_secrets(hit.text)[0]  # too large to read whole (issue 62.4): the line on its own
            if data is None or b"\0" in data[:_BINARY_PROBE]:
                self._files[hit.path] = None
            else:
                self._files[hit.path] = (_split_lines(data.decode("utf-8", errors="replace")),
                                         _split_lines(_masked_text(data)[0]))
        pair = self._files[hit.path]
        if pair is not None and 1 <= hit.line_no <= len(pair[1]):
            plain, masked = pair[0][hit.line_no - 1], pair[1][hit.line_no - 1]
            if plain != masked:
                return masked
        return hit.text


def _check_pathspec(raw: str) -> str:
    """A file_patterns entry that stays inside the repository; _Refused otherwise."""
    spec = raw.strip()
    if not spec:
        raise _Refused(
            'file_patterns entries must not be empty: write them like "src/" or "*.py", '
            "or leave file_patterns out to search everything"
        )
    body = spec
    if spec.startswith(":("):
        close = spec.find(")")
        if close < 0:
            raise _Refused(f'file_patterns entry "{spec}" has an unclosed ":(": write it like ":(exclude)vendor/"')
        words = [w.strip() for w in spec[2:close].split(",") if w.strip()]
        unknown = [w for w in words if w not in _PATHSPEC_MAGIC]
        if unknown:
            raise _Refused(
                f'file_patterns entry "{spec}" uses unsupported pathspec magic {", ".join(unknown)}; '
                f"allowed: {', '.join(sorted(_PATHSPEC_MAGIC))}, like \":(exclude)tests/\""
            )
        body = spec[close + 1 :]
    elif spec.startswith(":"):
        # Short magic: ":!" or ":^" exclude, ":/" from the top, optionally closed by another ":".
        position = 1
        while position < len(spec) and spec[position] in "!^/":
            position += 1
        if position < len(spec) and spec[position] == ":":
            position += 1
        body = spec[position:]
    problem = _path_problem(body)
    if problem:
        raise _Refused(
            f'file_patterns entry "{spec}" {problem}. Patterns are relative to the repository root, '
            'like "src/", "*.py" or ":(exclude)vendor/".'
        )
    return spec


# --- shared ------------------------------------------------------------------------------------


def _confine_path(raw: object, ctx: ToolContext) -> str:
    """The repository-relative form of a path from the model; _Refused if it could leave the snapshot."""
    if not isinstance(raw, str):
        raise _Refused(f'a path must be a text like "src/app/main.py", received {json.dumps(raw)}')
    from ocr_hook.changes.names import from_shown

    text = from_shown(raw.strip())  # a name that is not UTF-8, quoted as the prompts show it
    root = ctx.change_set.repo_root.rstrip("/")
    if text.startswith(f"{root}/") and root:
        relative = text[len(root) + 1 :]
        raise _Refused(f'"{text}" is an absolute path; use the repository-relative path "{relative}"')
    problem = _path_problem(text)
    if problem:
        raise _Refused(f'the path "{text}" {problem}; use a repository-relative path like "src/app/main.py"')
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if not parts:
        raise _Refused(f'the path "{text}" names the repository root, not a file')
    return "/".join(parts)


def _path_problem(text: str) -> str | None:
    if not text:
        return "is empty"
    if "\0" in text:
        return "contains a NUL character"
    if text.startswith(("/", "~")) or _WINDOWS_ABSOLUTE.match(text):
        return "is absolute"
    parts = text.split("/")
    if ".." in parts:
        return "leaves its directory with `..`"
    if any(part.casefold() == ".git" for part in parts):
        return "points into git's own `.git` data, which is not part of the reviewed files"
    return None


def _model_safe(text: str) -> str:
    """Text the API can carry: bytes that are not UTF-8 become U+FFFD instead of lone surrogates."""
    try:
        raw = text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", errors="surrogatepass")
    return raw.decode("utf-8", errors="replace")


CONTEXT_TOOLS: dict[str, ContextTool] = {
    "file_read": file_read,
    "file_read_diff": file_read_diff,
    "file_find": file_find,
    "code_search": code_search,
}
