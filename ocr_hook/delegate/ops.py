"""The three delegate operations (DESIGN.md 15) as functions any entry point calls: start, call, and the
agent that finish hands to the review pipeline. No model request is made here, and no key is needed.

A session is bound to its repository and to the snapshot it reviews: `snapshot_identity` names that snapshot
(the two sides, every changed file's object id and, for the staged scope, the whole index's staged listing),
and a call or finish whose snapshot no longer has that identity is refused (exit 2).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ocr_hook.agent import hosted
from ocr_hook.changes import git
from ocr_hook.changes.collect import collect_changes, repo_relative_paths
from ocr_hook.changes.model import ChangeSet
from ocr_hook.changes.scope import Scope
from ocr_hook.delegate.checks import CHECKS_PASS
from ocr_hook.delegate.session import FileState, Session, SessionError, SessionStore, new_id
from ocr_hook.digest import sha256_hex
from ocr_hook.errors import ConfigError, FatalError
from ocr_hook.settings import Settings, load

if TYPE_CHECKING:
    from ocr_hook.agent import ReviewJob
    from ocr_hook.outcome import ReviewResult


class CallAnswer(NamedTuple):
    text: str  # what the model would see
    is_error: bool
    state: str  # the file's state after the call: open | DONE | FAILED
    calls: int
    rounds: int


def open_store(root: str, environ: Mapping[str, str]) -> SessionStore:
    """The sessions of the cache directory the repository's settings name (cache_dir, OCR_HOOK_CACHE_DIR)."""
    from ocr_hook.store.result_cache import run_cache_dir

    return SessionStore(run_cache_dir(load(root, None, {}, environ).cache_dir, environ))


def snapshot_identity(change_set: ChangeSet) -> str:
    files = [[f.path, f.old_path, str(f.status), f.new_sha] for f in change_set.files]
    parts: dict[str, Any] = {"base": change_set.base, "target": change_set.target, "files": files}
    if change_set.target is None:  # the index: everything staged, also outside PATHS (the tools read it all)
        parts["index"] = git.git_text(change_set.repo_root, ["diff-index", "--cached", "--raw", "-z", "--no-abbrev",
                                                              "--no-renames", change_set.base, "--"])
    return sha256_hex(json.dumps(parts, sort_keys=True).encode("utf-8", "surrogateescape"))


def _gather_intent(explicit: str | None, change_set: ChangeSet, settings: Settings, environ: Mapping[str, str],
                   scope_kind: str) -> tuple[str, str] | None:
    """As `review` gathers it: given explicitly, else (context on) from CI or the range's commit messages."""
    if not settings.context:
        return (explicit, "given with the review") if explicit and explicit.strip() else None
    from ocr_hook.context.intent import gather

    return gather(explicit, environ, change_set.repo_root, change_set, scope_kind)


def start(cwd: str, scope: Scope, paths: Sequence[str], config_file: str | None, flags: Mapping[str, Any],
          environ: Mapping[str, str], intent: str | None = None) -> dict[str, Any]:
    """A new session: its id, each reviewable file's brief, rounds and effort, the skipped files with their
    reasons (as `preview` gives them) and the six tools' contracts."""
    from ocr_hook.agent import FileGuidance, ReviewJob
    from ocr_hook.budget.ledger import Budget
    from ocr_hook.changes.selection import select_files
    from ocr_hook.changes.snapshot import open_snapshot
    from ocr_hook.guidance.resolve import resolve_guidance
    from ocr_hook.guidance.settings_file import load_for

    root, head = git.repo_top(cwd)
    relative = repo_relative_paths(root, cwd, paths)
    # Kept absolute: finish and the calls may run from another directory (a relative path would name another
    # file there); the effective settings are fixed now, so later edits to the file change nothing.
    config_file = config_file or environ.get("OCR_HOOK_CONFIG") or None
    if config_file:
        config_file = os.path.abspath(os.path.join(cwd, os.path.expanduser(config_file)))
    change_set = collect_changes(root, scope, relative, environ, head=head)
    settings = load_for(change_set, config_file, flags, environ)  # a range: the trusted side's (DESIGN.md 5)
    if settings.baseline:
        settings = settings._replace(baseline=os.path.abspath(os.path.join(cwd, settings.baseline)))
    snapshot = open_snapshot(root, change_set, settings.max_file_bytes)
    try:
        selected = select_files(change_set, snapshot, settings)
        to_review = [s.change for s in selected if s.action == "review"]
        guidance = resolve_guidance(change_set, settings, [c.path for c in to_review])
        budget = Budget(max_cost_usd=settings.max_cost, max_tokens=settings.max_tokens,
                        deadline=time.monotonic() + settings.timeout, pricing=settings.pricing)
        job = ReviewJob(change_set=change_set, snapshot=snapshot, files=to_review, settings=settings, budget=budget,
                        cache=None, environ=environ,
                        intent=_gather_intent(intent, change_set, settings, environ, scope.kind) if to_review else None)
        job.guidance = {path: FileGuidance(sections, shared) for path, (sections, shared)
                        in guidance.prompt_guidance([c.path for c in to_review]).items()}
        if settings.memory and to_review:
            from ocr_hook.store.memory import open_memory
            from ocr_hook.store.result_cache import run_cache_dir

            memory = open_memory(run_cache_dir(settings.cache_dir, environ), root, scope, environ,
                                 base_ref=change_set.base_ref)
            if memory is not None:
                job.memory, job.memory_id = memory.remembered(), memory.record_key
        briefs = hosted.briefs(job)
        identity = snapshot_identity(change_set)
        from ocr_hook.delegate import checks

        checks_doc, check_names = checks.brief(change_set, snapshot, settings, job.intent if to_review else
                                               _gather_intent(intent, change_set, settings, environ, scope.kind))
    finally:
        snapshot.close()
    session = Session(id=new_id(), repo_root=root, scope=scope, paths=relative, config_file=config_file,
                      flags=dict(flags), snapshot=identity, created=time.time(),
                      files={b.path: FileState(b.rounds, b.effort, b.context_entries, b.context_cut) for b in briefs},
                      settings=settings, checks=dict.fromkeys(check_names))
    open_store(root, environ).create(session)
    # Each distinct system text once (most files share one: guidance differs only between directories), named
    # by the files that use it: ten files' output would otherwise repeat the same long text ten times.
    systems: dict[str, str] = {}
    for text in dict.fromkeys(b.system for b in briefs):
        systems[f"s{len(systems) + 1}"] = text
    system_of = {text: name for name, text in systems.items()}
    return {
        "session": session.id,
        "scope": change_set.description,
        "systems": systems,
        "files": [{"path": b.path, "effort": b.effort, "rounds": b.rounds, "system": system_of[b.system],
                   "brief": b.brief} for b in briefs],
        "skipped": [{"path": s.change.path, "status": s.change.status.value, "reason": s.reason,
                     "incomplete": s.incomplete} for s in selected if s.action == "skip"],
        "tools": hosted.tool_contracts(),
        "notes": list(settings.notes) + list(guidance.notes),
        # The team's checks that apply (DESIGN.md 20): answered through `--file :checks`, each with check_verdict.
        **({"checks": checks_doc} if checks_doc is not None else {}),
    }


def fresh(session: Session, cwd: str, environ: Mapping[str, str]) -> ChangeSet:
    """The session's change set as it is now; SessionError unless it is the repository and the snapshot
    the session started on."""
    root, head = git.repo_top(cwd)
    if os.path.realpath(root) != os.path.realpath(session.repo_root):
        raise SessionError(f"delegate session {session.id[:12]}… belongs to the repository {session.repo_root}, "
                           f"not {root}")
    change_set = collect_changes(root, session.scope, session.paths, environ, head=head)
    if snapshot_identity(change_set) != session.snapshot:
        what = "the index" if change_set.target is None else "the reviewed commits"
        raise SessionError(f"delegate session {session.id[:12]}… is stale: {what} changed since it started "
                           "(e.g. `git add` or a commit); run `ocr-hook delegate start` again")
    return change_set


MAX_INPUT_DEPTH = 64  # nesting levels of a tool's input; the six tools' inputs need three


class InputError(FatalError):
    """A tool input no tool could take (nested past MAX_INPUT_DEPTH): exit 2, or the MCP tool's error."""


def parse_input(raw: str | None) -> Any:
    """The call's JSON input; text that is not JSON is handed on as it came, as the SDK hands on a model's
    input that is not an object, and gets the same model-readable error."""
    if raw is None or not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except RecursionError:
        raise InputError(_TOO_DEEP) from None
    except ValueError:
        return raw


_TOO_DEEP = (f"the tool's input is nested more than {MAX_INPUT_DEPTH} levels deep; give it as the tool's "
             "input_schema shows, e.g. {\"file_path\": \"src/app.py\"}")


def _within_depth(value: Any) -> bool:
    """Whether `value` nests at most MAX_INPUT_DEPTH lists and objects (walked without recursion)."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth > MAX_INPUT_DEPTH:
                return False
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return True


def call(cwd: str, session_id: str, path: str, tool: str, tool_input: Any,
         environ: Mapping[str, str]) -> CallAnswer:
    """One tool call on one file of a session, answered as the agent loop answers it (`tool_input` as a
    model would give it: normally an object)."""
    from ocr_hook.agent import prompts
    from ocr_hook.changes.snapshot import open_snapshot

    if not _within_depth(tool_input):
        raise InputError(_TOO_DEEP)
    root, _ = git.repo_top(cwd)
    store = open_store(root, environ)
    with store.locked(session_id):
        session = store.load(session_id)
        change_set = fresh(session, cwd, environ)
        if path == CHECKS_PASS and path not in session.files:
            return _call_checks(session, store, change_set, root, tool, tool_input)
        state = session.files.get(path)
        if state is None:
            listed = ", ".join(session.files) or "(none: nothing to review)"
            raise SessionError(f"{path!r} is not a file of delegate session {session_id[:12]}…; its files: {listed}")
        if state.state != hosted.OPEN:
            raise SessionError(f"{path} is closed already (task_done {state.state}); call `delegate finish`")
        settings = session.settings  # as start fixed them (sensitive globs included)
        snapshot = open_snapshot(root, change_set, settings.max_file_bytes)
        try:
            result, comments, done = hosted.answer(tool, tool_input, change_set=change_set,
                                                   snapshot=snapshot, settings=settings, path=path,
                                                   comments=state.comments,
                                                   last_round=state.calls + 1 >= state.rounds)
        finally:
            snapshot.close()
        state.calls += 1
        state.comments = list(comments)
        if done is not None:
            state.state = done
        text = result.text or "(empty)"
        if done is None and state.calls + 1 == state.rounds:  # the next call is the last round, as the loop says
            text += "\n\n" + prompts.final_round(path)
        store.save(session)
    return CallAnswer(text, result.is_error, state.state, state.calls, state.rounds)


def _call_checks(session: Session, store: SessionStore, change_set: ChangeSet, root: str, tool: str,
                 tool_input: Any) -> CallAnswer:
    """A call of the checks pass (delegate.checks), under the session's lock as a file's call."""
    from ocr_hook.changes.snapshot import open_snapshot
    from ocr_hook.delegate import checks

    if not session.checks:
        raise SessionError(f"delegate session {session.id[:12]}… has no check to answer (none applies to the change)")
    snapshot = open_snapshot(root, change_set, session.settings.max_file_bytes)
    try:
        result = checks.answer(session, change_set, snapshot, tool, tool_input)
    finally:
        snapshot.close()
    store.save(session)
    answered = sum(v is not None for v in session.checks.values())
    state = "DONE" if session.checks_done else hosted.OPEN
    return CallAnswer(result.text or "(empty)", result.is_error, state, answered, len(session.checks))


def load_fresh(cwd: str, session_id: str, environ: Mapping[str, str]) -> tuple[Session, ChangeSet]:
    """The session for finish, after the same checks as a call, with the one collection of the changes that
    was checked: finish reviews that one, never a second collection the index may have moved under."""
    root, _ = git.repo_top(cwd)
    store = open_store(root, environ)
    with store.locked(session_id):
        session = store.load(session_id)
    return session, fresh(session, cwd, environ)


# Gate settings, the one that blocks (or counts) the most first: finish may move start's only this way.
_FAIL_ON_STRICTEST_FIRST = ("low", "medium", "high", "critical", "never")
_FILTER_MODE_STRICTEST_FIRST = ("nofilter", "file", "diff_context", "added")
# What finish decides: where and how the report goes, and whether review memory is used.
_FINISH_OWN = ("format", "sarif_output", "json_output", "gitlab_output", "patch_output", "sarif_category", "memory")


def finish_settings(session: Session, loaded: Settings, flags: Mapping[str, Any]) -> Settings:
    """The settings finish judges with: start's, never a lower gate (DESIGN.md 15). `loaded`: the settings as
    they load at finish (its flags, environment and files); they choose the outputs, and may only make the gate
    stricter. ConfigError for a --baseline that is not start's (a baseline only ever lets findings pass)."""
    fixed = session.settings
    given = flags.get("baseline")
    if given and os.path.abspath(given) != fixed.baseline:
        raise ConfigError("delegate finish: --baseline cannot be given at finish: the baseline is part of the gate "
                          "the session fixed at start (give it to `delegate start`, e.g. in your --config file)")
    changes: dict[str, Any] = {key: getattr(loaded, key) for key in _FINISH_OWN}
    changes["fail_on"] = min(fixed.fail_on, loaded.fail_on, key=_FAIL_ON_STRICTEST_FIRST.index)
    changes["filter_mode"] = min(fixed.filter_mode, loaded.filter_mode, key=_FILTER_MODE_STRICTEST_FIRST.index)
    changes["on_error"] = "fail" if "fail" in (fixed.on_error, loaded.on_error) else "warn"
    changes["late_findings"] = "block" if "block" in (fixed.late_findings, loaded.late_findings) else "advisory"
    return fixed._replace(**changes, notes=loaded.notes)


def check_judged(session: Session, result: ReviewResult) -> None:
    """SessionError unless the review judged (reviewed or failed) every file start listed."""
    judged = {c.path for c in result.files if c.state in ("reviewed", "failed")}
    missing = [path for path in session.files if path not in judged]
    if missing:
        raise SessionError(f"delegate session {session.id[:12]}…: finish would not judge {', '.join(missing)}, "
                           "which start listed; run `ocr-hook delegate start` again")


def agent_for(session: Session) -> Callable[[ReviewJob], ReviewResult]:
    """What the review pipeline runs instead of the agent: the session's comments and states, settled."""
    from ocr_hook.delegate.checks import host_verdicts

    class Host:
        # The checks pass's verdicts as the host reported them: the review pipeline takes them in place of the
        # pass (commands.review reads `check_verdicts` of the agent it is handed).
        check_verdicts = host_verdicts(session)

        def __call__(self, job: ReviewJob) -> ReviewResult:
            from ocr_hook.effort import profile

            job.profiles = {**{path: profile(f.effort) for path, f in session.files.items()}, **(job.profiles or {})}
            return hosted.review_settled(job, {path: f.settled() for path, f in session.files.items()},
                                         {path: (f.context_entries, f.context_cut) for path, f in
                                          session.files.items()})

    return Host()
