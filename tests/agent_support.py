"""Helpers for the agent tests: a staged change in a real scratch repo, and a ReviewJob over it."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fake_api import FakeMessagesAPI, RecordedRequest, Reply, first_user_text, text
from gitrepo import commit_all, git, make_repo, write

from ocr_hook.agent import ReviewJob
from ocr_hook.budget.ledger import Budget
from ocr_hook.changes import collect_changes, open_snapshot, select_files
from ocr_hook.changes.scope import Scope
from ocr_hook.settings import Settings, load
from ocr_hook.store.result_cache import ResultCache

MAIN_TOOLS = ["task_done", "code_comment", "file_read", "file_read_diff", "file_find", "code_search"]
PLAN_TOOLS = ["file_read_diff", "file_find", "code_search"]
FINAL_TOOLS = ["task_done", "code_comment"]


def staged_repo(root: Path, before: Mapping[str, str], after: Mapping[str, str | None]) -> Path:
    """A repo with `before` committed and `after` staged (None deletes a file)."""
    make_repo(root)
    for path, content in before.items():
        write(root, path, content)
    commit_all(root, "base")
    for path, content in after.items():
        if content is None:
            git(root, "rm", "-q", "--", path)
        else:
            write(root, path, content)
            git(root, "add", "--", path)
    return root


def settings_for(root: Path, **overrides: Any) -> Settings:
    """The shipped settings with the provider the review jobs' environments name (the Messages API); provider
    auto is resolved when settings load, with the environment the review runs in."""
    settings = load(root, None, {}, environ={})
    return settings._replace(**{"cache": False, "provider": "anthropic", **overrides})


@contextmanager
def review_job(root: Path, environ: Mapping[str, str], *, cache_dir: Path | None = None,
               events: list[tuple[str, str, str]] | None = None, max_cost: float = 5.0,
               max_tokens: int = 10_000_000, timeout: float = 60.0, **overrides: Any) -> Iterator[ReviewJob]:
    settings = settings_for(root, **overrides)
    change_set = collect_changes(str(root), Scope("staged"), (), environ)
    snapshot = open_snapshot(str(root), change_set)
    try:
        files = [s.change for s in select_files(change_set, snapshot, settings) if s.action == "review"]
        budget = Budget(max_cost_usd=max_cost, max_tokens=max_tokens, deadline=time.monotonic() + timeout,
                        pricing=settings.pricing)
        sink = events if events is not None else []
        yield ReviewJob(change_set=change_set, snapshot=snapshot, files=files, settings=settings, budget=budget,
                        cache=ResultCache(cache_dir) if cache_dir is not None else None,
                        on_event=lambda path, kind, detail: sink.append((path, kind, detail)),
                        environ=dict(environ))
    finally:
        snapshot.close()


# --- what the SDK sent ------------------------------------------------------------------------------


def main_opening(path: str) -> str:
    """Text unique to the first message of a file's main conversation (scripts match on it)."""
    return f"Review the change to `{path}`"


def plan_opening(path: str) -> str:
    return f"Planning step for the review of `{path}`"


def tool_names(req: RecordedRequest) -> list[str]:
    return [t["name"] for t in req.body.get("tools") or []]


def breakpoints(body: Mapping[str, Any]) -> int:
    count = sum(1 for t in body.get("tools") or [] if "cache_control" in t)
    system = body.get("system")
    if isinstance(system, list):
        count += sum(1 for b in system if "cache_control" in b)
    for message in body.get("messages") or []:
        if isinstance(message.get("content"), list):
            count += sum(1 for b in message["content"] if "cache_control" in b)
    return count


def last_user_blocks(req: RecordedRequest) -> list[dict[str, Any]]:
    return req.body["messages"][-1]["content"]


def is_filter(body: Mapping[str, Any]) -> bool:
    return "You check code review comments" in _system_text(body)


def keep_all(body: Mapping[str, Any]) -> Reply:
    """The review filter's answer that marks no comment wrong."""
    return Reply([text('{"wrong": []}')])


def filter_keeps_all(fake: FakeMessagesAPI) -> None:
    """Every review-filter request answered with "nothing is wrong": the filter keeps every comment."""
    fake.handle(is_filter, keep_all)


def is_relocate(body: Mapping[str, Any]) -> bool:
    return "You help place code review comments" in _system_text(body)


def _system_text(body: Mapping[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    return ""


def opening_of(req: RecordedRequest) -> str:
    return first_user_text(req.body)


def is_notes_request(body: Mapping[str, Any]) -> bool:
    """The request for the model's notes on its older turns (see ocr_hook.agent.compaction)."""
    messages = body.get("messages") or []
    content = messages[-1].get("content") if messages else None
    return (isinstance(content, list) and bool(content) and content[-1].get("type") == "text"
            and content[-1].get("text", "").startswith("Pause the review of"))
