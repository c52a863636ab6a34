"""What ocr-hook says on an Azure DevOps pull request: threads, the general thread, the status (pure).

A finding on lines of a file the pull request changes becomes a thread of its own on those lines of the
right side (`threadContext.filePath` with a leading slash, `rightFileStart`/`rightFileEnd` as line and
offset), tied to the latest iteration (`pullRequestThreadContext`: the change's `changeTrackingId` and
`iterationContext` 1..latest, the "all changes" view) so that Azure keeps it on its lines when later
pushes move them. At most 50 such threads, most severe first; every other finding is listed in one
general thread (no file) that later runs edit rather than post again. Each thread's first comment
starts with a hidden marker carrying the fingerprint, and only comments by the identity publishing now
count: a person cannot quote a marker into a thread and so silence a finding. A thread whose finding
review memory found fixed is set to `fixed`. The status (`ocr-hook`, succeeded/failed from the gate) is
what a branch policy can require.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ocr_hook.findings import Finding
from ocr_hook.publish.report_input import Report
from ocr_hook.publish.review_plan import (
    MAX_INLINE,
    MOVED,
    OUTSIDE_DIFF,
    OVER_CAP,
    UNANCHORED,
    comment_body,
    comment_fingerprint,
    review_body,
    review_marker,
)

STATUS_NAME = "ocr-hook"
STATUS_GENRE = "code-review"
MAX_DESCRIPTION = 400


@dataclass(frozen=True, slots=True)
class ChangedFile:
    tracking_id: int  # changeTrackingId of the file in the latest iteration
    lines: Sequence[str] | None  # the file at the iteration's source commit, where it could be read


@dataclass(frozen=True, slots=True)
class Ours:
    """What earlier runs (the identity publishing now) left on the pull request."""

    threads: Mapping[str, tuple[int, str]]  # fingerprint → (thread id, status)
    general: tuple[int, int, str] | None  # (thread id, comment id, content) of the general thread


@dataclass(frozen=True, slots=True)
class ThreadsPlan:
    new_threads: tuple[tuple[Finding, dict[str, Any]], ...]  # POST …/threads bodies
    in_general: tuple[tuple[Finding, str], ...]
    general: str  # the general thread's content
    general_changed: bool  # False: the general thread already says this
    to_fix: tuple[int, ...]  # thread ids to set to fixed
    already: int
    suppressed: int
    status: dict[str, Any]


def ours(threads: Iterable[Mapping[str, Any]], identity: str) -> Ours:
    """The threads whose first comment is ocr-hook's, written by `identity`."""
    found: dict[str, tuple[int, str]] = {}
    general: tuple[int, int, str] | None = None
    for t in threads:
        comments = t.get("comments") or []
        if t.get("isDeleted") or not comments or not isinstance(comments[0], Mapping):
            continue
        first = comments[0]
        if str((first.get("author") or {}).get("id") or "") != identity:
            continue
        content = str(first.get("content") or "")
        if fp := comment_fingerprint(content):
            found[fp] = (int(t["id"]), str(t.get("status") or ""))
        elif review_marker(content) and general is None:
            general = (int(t["id"]), int(first["id"]), content)
    return Ours(found, general)


def _importance(f: Finding) -> tuple[Any, ...]:
    return (-f.severity.rank, f.path, f.start_line, f.end_line, f.fingerprint)


def _lines_of(f: Finding) -> tuple[int, int]:
    if f.fix is not None:
        return f.fix.start_line, max(f.fix.start_line, f.fix.end_line)
    return f.start_line, max(f.start_line, f.end_line)


def _same(head: Sequence[str] | None, reviewed: Sequence[str] | None, start: int, end: int) -> bool:
    if head is None or end > len(head):
        return head is None and reviewed is not None and end <= len(reviewed)
    if reviewed is None:
        return True
    return end <= len(reviewed) and all(head[n - 1].rstrip("\r\n") == reviewed[n - 1].rstrip("\r\n")
                                        for n in range(start, end + 1))


def thread_body(f: Finding, start: int, end: int, changed: ChangedFile, iteration: int) -> dict[str, Any]:
    end_offset = len((changed.lines or [""] * end)[end - 1].rstrip("\r\n")) + 1 if changed.lines else 1
    return {
        "comments": [{"parentCommentId": 0, "content": comment_body(f), "commentType": "text"}],
        "status": "active",
        "threadContext": {"filePath": "/" + f.path, "rightFileStart": {"line": start, "offset": 1},
                          "rightFileEnd": {"line": end, "offset": max(1, end_offset)}},
        "pullRequestThreadContext": {"changeTrackingId": changed.tracking_id,
                                     "iterationContext": {"firstComparingIteration": 1,
                                                          "secondComparingIteration": iteration}},
    }


def status_body(report: Report, iteration: int) -> dict[str, Any]:
    state = "succeeded" if report.exit_code == 0 else "failed"
    description = " ".join((report.verdict or state).split())
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "…"
    return {"state": state, "description": description, "context": {"name": STATUS_NAME, "genre": STATUS_GENRE},
            "iterationId": iteration}


def plan_threads(report: Report, files: Mapping[str, ChangedFile], before: Ours, iteration: int, *,
                 reviewed: Mapping[str, Sequence[str]] | None = None,
                 resolved: Iterable[str] = ()) -> ThreadsPlan:
    reviewed = reviewed or {}
    live = sorted((f for f in report.findings if f.suppressed is None), key=_importance)
    suppressed = len(report.findings) - len(live)
    new = [f for f in live if f.fingerprint not in before.threads]
    threads: list[tuple[Finding, dict[str, Any]]] = []
    in_general: list[tuple[Finding, str]] = []
    for f in new:
        start, end = _lines_of(f)
        changed = files.get(f.path)
        if not f.anchored or start < 1:
            in_general.append((f, UNANCHORED))
        elif changed is None:
            in_general.append((f, OUTSIDE_DIFF))
        elif not _same(changed.lines, reviewed.get(f.path), start, end):
            in_general.append((f, MOVED))
        elif len(threads) >= MAX_INLINE:
            in_general.append((f, OVER_CAP))
        else:
            threads.append((f, thread_body(f, start, end, changed, iteration)))
    already = len(live) - len(new)
    # The general thread lists what is not on a line; it says what this run found, so it is written again
    # whenever the findings or the verdict change. Its inline count is of this run's new threads.
    general, _listed = review_body(report, [_Counted()] * len(threads), in_general, already=already,
                                   suppressed=suppressed)
    general = general.replace("### ocr-hook review", "### ocr-hook review (Azure DevOps)", 1)
    changed_general = before.general is None or before.general[2] != general
    fixed = {fp for fp in resolved}
    to_fix = tuple(sorted(tid for fp, (tid, status) in before.threads.items()
                          if fp in fixed and status not in ("fixed", "closed", "wontFix", "byDesign")))
    return ThreadsPlan(tuple(threads), tuple(in_general), general, changed_general, to_fix, already, suppressed,
                       status_body(report, iteration))


class _Counted:
    """review_body counts the inline comments; on Azure those are threads (only their number matters)."""
