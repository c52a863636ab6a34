"""`ocr-hook review`: changes → selection → agent → findings → gate → reports."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from ocr_hook import __version__
from ocr_hook.changes import deadline, git
from ocr_hook.changes.collect import collect_changes, raw_command, repo_relative_paths
from ocr_hook.changes.deadline import time_limit_text
from ocr_hook.changes.git import repo_top
from ocr_hook.changes.scope import SCAN, Scope
from ocr_hook.commands.progress import Progress
from ocr_hook.errors import ConfigError
from ocr_hook.hookenv import commit_time
from ocr_hook.outcome import FileCoverage, ReviewResult
from ocr_hook.settings import (
    REPO_CONFIG_NAME,
    SCAN_DEFAULTS,
    Settings,
    is_sparse_checkout,
    load,
    settings_hidden_by_sparse_checkout,
)

if TYPE_CHECKING:
    from ocr_hook.agent import FileGuidance, ReviewJob
    from ocr_hook.agent.checks_stage import ChecksPlan
    from ocr_hook.budget.ledger import Budget
    from ocr_hook.changes.model import ChangeSet, FileChange
    from ocr_hook.changes.selection import Selected
    from ocr_hook.changes.snapshot_api import Snapshot
    from ocr_hook.checks.model import CheckVerdict
    from ocr_hook.findings import Finding
    from ocr_hook.findings.dismissals import Dismissal
    from ocr_hook.guidance.resolve import GuidancePlan
    from ocr_hook.reports import ReportContext
    from ocr_hook.store.memory import MemoryStore, RunFacts
    from ocr_hook.tickets.model import TicketsRead


# Reviews a job's files instead of the agent (ocr_hook.agent.review_files), e.g. from a host agent's comments.
Agent = Callable[["ReviewJob"], ReviewResult]


def _no_event(path: str, kind: str, detail: str) -> None:
    pass


class Reviewed(NamedTuple):
    """A finished review, before any report is written: what an entry point renders or returns."""

    result: ReviewResult
    change_set: ChangeSet
    texts: dict[str, str]  # the reviewed text of every file with a finding
    settings: Settings


def run(scope: Scope, paths: Sequence[str], config_file: str | None, flags: Mapping[str, Any], *,
        quiet: bool = False, shard: str | None = None, environ: Mapping[str, str] | None = None,
        baseline_out: str | None = None, intent: str | None = None) -> int:
    environ = os.environ if environ is None else environ
    # Before anything can fail: a run that stops early (exit 2 on a broken config, no key) must not leave
    # an old report, or one the change itself committed, where a later step reads this run's verdict.
    clear_outputs(flags.get(k) for k in ("json_output", "sarif_output", "gitlab_output"))
    # pre-commit shows a hook's output only once it has finished: progress lines would just lengthen it.
    quiet = quiet or (commit_time(environ) and not sys.stderr.isatty())
    progress = Progress(sys.stderr, quiet=quiet, live=sys.stderr.isatty())
    done = review(scope, paths, config_file, flags, on_event=progress.event, shard=shard, environ=environ,
                  baseline_out=baseline_out, intent=intent)
    return report(done.result, done.change_set, done.texts, done.settings, progress, environ,
                  scope_kind=scope.kind, rerun=rerun_args(scope, paths))


def rerun_args(scope: Scope, paths: Sequence[str]) -> str:
    """The arguments that run this review again, scope and paths kept, for a hint's command (shell-quoted)."""
    if scope == Scope("staged") and not paths:  # every commit's run: nothing to quote,
        return "review"  # and no shlex to load for a hint most runs never print (issue 62.9)
    import shlex

    if scope.kind == SCAN:
        words = ["scan", *(["--rev", scope.rev] if scope.rev and scope.rev != "HEAD" else []),
                 *([] if scope.rev else ["--staged"])]
    elif scope.kind == "push" and scope.to_ref:  # (a pre-push hook's range: run again by hand, it has none)
        words = ["review", *(["--from", scope.from_ref] if scope.from_ref else []), "--to", scope.to_ref]
    else:
        flags = {"base": "--base", "from_ref": "--from", "to_ref": "--to", "commit": "--commit"}
        words = ["review", *(["--push"] if scope.kind == "push" else [])]
        for name, flag in flags.items():
            value = getattr(scope, name)
            if value is not None:
                words += [flag, value]
    if paths:
        words += ["--", *paths]
    return " ".join(shlex.quote(w) for w in words)


def run_push(paths: Sequence[str], config_file: str | None, flags: Mapping[str, Any], *, quiet: bool = False,
             shard: str | None = None, intent: str | None = None, environ: Mapping[str, str] | None = None,
             stdin: TextIO | None = None) -> int:
    """`review --push`: the range pre-commit (or prek) names, else each range of the lines git gives a
    pre-push hook on standard input, reviewed one after the other; the worst exit code wins."""
    environ = os.environ if environ is None else environ
    if environ.get("PRE_COMMIT") == "1" or environ.get("PRE_COMMIT_TO_REF") or environ.get("PRE_COMMIT_FROM_REF"):
        return run(Scope("push"), paths, config_file, flags, quiet=quiet, shard=shard, environ=environ,
                   intent=intent)
    from ocr_hook.errors import FatalError
    from ocr_hook.hookenv import PushInputError, pushed_refs

    stdin = sys.stdin if stdin is None else stdin
    text = "" if stdin is None or stdin.isatty() else stdin.read()
    try:
        refs = pushed_refs(text)
    except PushInputError as exc:
        raise FatalError(f"review --push: {exc}") from None
    if not refs:
        if text.strip():
            sys.stderr.write("ocr-hook: the push only deletes refs: nothing to review\n")
            return 0
        if _git_gave_no_lines(stdin, environ):
            sys.stderr.write("ocr-hook: the push sends nothing (everything up to date): nothing to review\n")
            return 0
        raise FatalError("review --push: no range to review: run it from a pre-push hook, which gives it the "
                         "pushed refs on standard input (lefthook: `use_stdin: true`), or under pre-commit")
    codes = [run(Scope("push", from_ref=None if ref.new else ref.remote_sha, to_ref=ref.local_sha), paths,
                 config_file, flags, quiet=quiet, shard=shard, environ=environ, intent=intent) for ref in refs]
    from ocr_hook import gate

    return gate.worst_exit(codes)


def _git_gave_no_lines(stdin: TextIO | None, environ: Mapping[str, str]) -> bool:
    """Whether git ran this pre-push hook with no line at all, as for a push with everything up to date, rather
    than nobody passing its lines on. Git runs a hook with its lines on a pipe (and GIT_EXEC_PATH set); the pipe
    is empty alike when lefthook passes nothing on, so only a hook known to pass them on counts (a plain one,
    husky's, lefthook's script with use_stdin)."""
    import stat

    if stdin is None or not environ.get("GIT_EXEC_PATH"):
        return False
    try:
        if not stat.S_ISFIFO(os.fstat(stdin.fileno()).st_mode):
            return False  # a terminal or /dev/null: run by hand
        from ocr_hook.commands.doctor_hooks import passes_push_lines

        return passes_push_lines(repo_top(os.getcwd())[0])
    except Exception:  # (no file descriptor, no repository): the run's own error says what is wrong
        return False


def review(scope: Scope, paths: Sequence[str], config_file: str | None, flags: Mapping[str, Any], *,
           cwd: str | None = None, on_event: Callable[[str, str, str], None] = _no_event,
           shard: str | None = None, environ: Mapping[str, str] | None = None, baseline_out: str | None = None,
           adjust: Callable[[Settings], Settings] | None = None,
           on_budget: Callable[[Budget], None] | None = None, intent: str | None = None,
           agent: Agent | None = None, change_set: ChangeSet | None = None) -> Reviewed:
    """The whole review without writing anything to standard output (reports are the caller's).

    `cwd` (default: the process's) locates the repository and anchors relative PATHS; `adjust` may
    change the loaded settings (e.g. lower a cap) before anything uses them; `on_budget` receives the
    run's budget once it exists, so the caller can stop the run early (Budget.stop); `intent` is what the
    change is for as its author says it (--intent, the MCP tool), else it comes from CI or the commits;
    `agent` replaces the agent's review of the job's files (delegate mode: a host agent's comments);
    `change_set`: the scope's changes as the caller collected and checked them (delegate finish), not again."""
    environ = os.environ if environ is None else environ
    started = time.monotonic()
    cwd = os.getcwd() if cwd is None else cwd
    root, head = repo_top(cwd)
    with git.prefetching():
        relative = repo_relative_paths(root, cwd, paths)
        if scope.kind == "staged" and head is not None and change_set is None:  # (runs while the settings load)
            git.prefetch(root, [raw_command(head, None, relative)])
        sides = None
        if change_set is None and scope.kind not in ("staged", SCAN):
            from ocr_hook.changes.collect import resolve_sides

            sides = resolve_sides(root, scope, environ, head=head)
        if change_set is not None:  # a range collected by the caller (delegate finish): its trusted side's file
            from ocr_hook.guidance.settings_file import load_for

            settings = load_for(change_set, config_file, flags, environ)
        elif sides is not None:  # a range: the repository's settings as its trusted side has them (DESIGN.md 5)
            from ocr_hook.guidance.settings_file import load_for_sides

            settings = load_for_sides(root, sides, config_file, flags, environ)
        elif scope.kind == SCAN and scope.rev is not None and git.resolve_commit(root, scope.rev) != head:
            from ocr_hook.guidance.settings_file import load_for_scan  # REV's own settings file (issue 58.8)

            settings = load_for_scan(root, scope.rev, config_file, flags, environ, SCAN_DEFAULTS)
        else:
            settings = load_worktree_settings(root, config_file, flags, environ,
                                              SCAN_DEFAULTS if scope.kind == SCAN else None)
        if adjust is not None:
            settings = adjust(settings)
        if baseline_out:
            make_parent(baseline_out)
        check_output_paths({"--sarif-output": settings.sarif_output, "--json-output": settings.json_output,
                            "--gitlab-output": settings.gitlab_output, "--output": baseline_out,
                            "--patch-output": settings.patch_output})
        clear_outputs((settings.json_output, settings.sarif_output, settings.gitlab_output))  # (config-named)
        # --timeout counts from here, the preparation included (issue 55.8): the diff and the selection stop there.
        with deadline.bounded(started + settings.timeout, time_limit_text(settings.timeout)):
            if change_set is None:
                change_set = collect_changes(root, scope, relative, environ, head=head,
                                             max_bytes=settings.max_file_bytes, sides=sides, selection=settings)
            if not change_set.files:
                # The idle path of a hook run on every commit: no snapshot, selection or agent to load.
                empty = ReviewResult(findings=[], files=[], scope=change_set.description,
                                     elapsed_s=time.monotonic() - started, notes=list(settings.notes))
                return Reviewed(empty, change_set, {}, settings)
            return _review_files(root, scope, change_set, settings, on_event, environ, started, shard, on_budget,
                                 baseline_out, intent, agent)


def load_worktree_settings(root: str, config_file: str | None, flags: Mapping[str, Any], environ: Mapping[str, str],
                           command_defaults: Mapping[str, Any] | None) -> Settings:
    """The work tree's settings (a staged review, a scan of HEAD); in a sparse checkout that leaves the file out of
    the work tree, the index's, which the next commit keeps (issue 62.7): never "no settings" for that."""
    if not settings_hidden_by_sparse_checkout(root, config_file, environ):
        return load(root, config_file, flags, environ, command_defaults=command_defaults)
    from ocr_hook.guidance.settings_file import repo_file_in_index

    found = repo_file_in_index(root)
    settings = load(root, config_file, flags, environ, repo_file=found, command_defaults=command_defaults)
    if found.text is None:
        return settings
    return settings._replace(notes=(*settings.notes, f"{REPO_CONFIG_NAME} read from the index: the sparse checkout "
                                                     "leaves it out of the work tree"))


def _snapshot_dismissals(snapshot: Snapshot, name: str) -> tuple[Dismissal, ...]:
    """The dismissals file as the reviewed snapshot has it, with the work tree's file's limits: never a link,
    never over its size cap, UTF-8 only (each a one-line error, exit 2)."""
    from ocr_hook.findings.dismissals import MAX_FILE_BYTES, parse_text

    if snapshot.is_symlink(name):
        raise ConfigError(f"dismissals file {name}: not read: it is a symbolic link")
    data = snapshot.read_bytes(name)
    if data is None:
        return ()
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"dismissals file {name}: not read: over {MAX_FILE_BYTES:,} bytes")
    try:
        return parse_text(data.decode("utf-8"), name)
    except UnicodeDecodeError:
        raise ConfigError(f"dismissals file {name}: not UTF-8 text") from None


def _prefetch_git(change_set: ChangeSet) -> None:
    """Start the git listing the run reads whole (the trusted revision, for guidance files) now, so git runs
    beside the imports and the work that come first (git.prefetch). The reviewed snapshot's, for the context
    pack, is started once the cache lookups know a pack is needed (agent.run): a cached run needs none."""
    from ocr_hook.changes.snapshot import listing_command

    trusted = change_set.guidance_rev if change_set.scan else change_set.base
    if trusted is not None and not git.is_empty_tree(trusted):  # as guidance.resolve.trusted_revision decides
        git.prefetch(change_set.repo_root, [listing_command(trusted)])


def _review_files(root: str, scope: Scope, change_set: ChangeSet, settings: Settings,
                  on_event: Callable[[str, str, str], None], environ: Mapping[str, str], started: float,
                  shard: str | None, on_budget: Callable[[Budget], None] | None, baseline_out: str | None,
                  intent: str | None, agent: Agent | None = None) -> Reviewed:
    from ocr_hook.changes.snapshot import open_snapshot

    # (its cat-file first: the first reads come before the listings')
    snapshot = open_snapshot(root, change_set, settings.max_file_bytes)
    try:
        _prefetch_git(change_set)
        dismissed: tuple[Dismissal, ...] = ()
        if os.path.lexists(os.path.join(root, settings.dismissals_file)):  # (most repositories have none)
            from ocr_hook.findings.dismissals import load_file

            dismissed = load_file(root, settings.dismissals_file)  # before any paid work: a bad file is exit 2
        elif is_sparse_checkout(root, environ):  # left out of the work tree, not out of the repository (62.7)
            dismissed = _snapshot_dismissals(snapshot, settings.dismissals_file)
        memory = _open_memory(root, scope, change_set, settings, environ)
        result, texts = review_change_set(change_set, snapshot, settings, on_event, environ, started, shard,
                                          on_budget, memory, dismissed,
                                          intent=_Intent(intent, scope.kind), agent=agent)
        if memory is None:  # no line of work (or memory off): still the repository's latest review, for apply
            _remember_latest(root, result, change_set, texts, settings, environ)
        result.notes = [*settings.notes, *_provider_note(settings), *result.notes]  # what loading the settings did
        feedback: Mapping[str, Mapping[str, int]] = {}
        overridable = result.findings or any(v.verdict in ("fail", "inconclusive") for v in result.checks)
        if scope.kind == "base" and overridable and any(environ.get(n, "").strip() for n in FORGE_TOKENS):
            feedback = _apply_forge_dismissals(result, settings, environ, started, root)
        if memory is not None:  # after the forge's dismissals: the history counts them too
            _record_history(memory, result, settings, environ, feedback)
        if baseline_out:
            from ocr_hook.findings.suppress import baseline_text
            from ocr_hook.store.atomic import write_atomic

            write_atomic(baseline_out, baseline_text(result.findings))
        return Reviewed(result, change_set, texts, settings)
    finally:
        snapshot.close()


# A pull request's review in CI with one of these reads what people decided on its threads (DESIGN.md 18).
FORGE_TOKENS = ("GITHUB_TOKEN", "GITLAB_TOKEN", "GITEA_TOKEN", "BITBUCKET_ACCESS_TOKEN", "SYSTEM_ACCESSTOKEN")


def _apply_forge_dismissals(result: ReviewResult, settings: Settings, environ: Mapping[str, str], started: float,
                            root: str) -> Mapping[str, Mapping[str, int]]:
    """Findings a person with write access dismissed on the pull request (resolved ocr-hook's thread) no longer
    count for this review; reading the forge is bounded by what --timeout leaves, and a failure is one note.
    Returns the people's reactions and replies on ocr-hook's comments, for the review history."""
    from pathlib import Path

    from ocr_hook.findings.dismissals import apply_forge
    from ocr_hook.publish.forge_dismissals import read

    found = read(environ, started + settings.timeout, Path(root))
    if found.note:
        result.notes.append(found.note)
    if found.found:
        result.findings = apply_forge(result.findings, found.found)
    if found.checks:  # a maintainer's resolve of a failed check's thread: that check's override (DESIGN.md 20)
        from ocr_hook.publish.check_threads import apply_overrides

        result.checks = apply_overrides(result.checks, found.checks)
    return found.feedback


def _provider_note(settings: Settings) -> list[str]:
    """What `provider: auto` chose when it was not the API key every run without it assumes (DESIGN.md 19)."""
    from ocr_hook.provider_auto import PASSED_OVER

    if settings.provider == "anthropic" and PASSED_OVER in settings.provider_choice:
        return [f"provider auto: reviewed through {settings.provider_choice}"]
    if settings.provider != "claude-code" or not settings.provider_choice:
        return []
    from ocr_hook.outcome import RoutineNote

    return [RoutineNote(f"provider auto: reviewed through {settings.provider_choice}")]


class _Intent(NamedTuple):
    """What the change is for, gathered only once there are files to review (DESIGN.md 12)."""

    explicit: str | None
    scope_kind: str


def _gather_intent(intent: _Intent | None, change_set: ChangeSet, settings: Settings,
                   environ: Mapping[str, str]) -> tuple[str, str] | None:
    """The intent given explicitly, else (context on) the request's description in CI or the range's
    commit messages."""
    if intent is None or (intent.scope_kind in ("staged", SCAN) and not (intent.explicit or "").strip()):
        return None  # (as gather answers, before its import: outside a range only an intent given is one)
    from ocr_hook.context.intent import gather

    if not settings.context:  # context off: only an intent given explicitly is sent
        return (intent.explicit, "given with the review") if intent.explicit and intent.explicit.strip() else None
    return gather(intent.explicit, environ, change_set.repo_root, change_set, intent.scope_kind)


def _open_memory(root: str, scope: Scope, change_set: ChangeSet, settings: Settings,
                 environ: Mapping[str, str]) -> MemoryStore | None:
    """Review memory for this review's line of work, or None (memory off; --commit and --from/--to)."""
    if not settings.memory:
        return None
    from ocr_hook.store.memory import open_memory
    from ocr_hook.store.result_cache import run_cache_dir

    return open_memory(run_cache_dir(settings.cache_dir, environ), root, scope, environ, base_ref=change_set.base_ref)


def clear_outputs(paths: Iterable[str | None]) -> None:
    """Remove the regular file at each report path now: every report this run names is then either this run's
    or absent, whatever the exit code. A device or a FIFO (`/dev/null`) is never removed (the report is written
    through it); a link to a file is refused here, before any work (ocr_hook.store.atomic)."""
    for name in paths:
        if not name:
            continue
        from ocr_hook.store.atomic import LINK, LINK_REFUSED, REGULAR, output_kind

        try:
            kind = output_kind(name)
            if kind == REGULAR:
                os.unlink(name)
        except OSError as exc:
            raise ConfigError(f"output path {name}: cannot remove what is there: {exc.strerror or exc}") from None
        if kind == LINK:
            raise ConfigError(f"output path {name}: {LINK_REFUSED}")


def make_parent(path: str) -> None:
    """The baseline's directory, made when missing (`.ocr-hook/`, as `dismiss` makes it), before any paid work:
    adopting ocr-hook is one command on a repository that has no such directory yet."""
    parent = os.path.dirname(path)
    if parent and not os.path.isdir(parent):
        try:
            os.makedirs(parent)
        except OSError as exc:
            raise ConfigError(f"output path {path}: cannot make directory {parent}: {exc.strerror or exc}") from None


def check_output_paths(paths: Mapping[str, str | None]) -> None:
    """Refuse unwritable output paths, and one file named for two outputs (the later write would silently
    replace the earlier), before any work, so a typo never costs a paid review. `paths`: option → path."""
    named = {option: name for option, name in paths.items() if name}
    if not named:
        return
    from pathlib import Path  # here: a run with no output file need not load pathlib

    from ocr_hook.store.atomic import DIRECTORY, LINK, LINK_REFUSED, SPECIAL, output_kind

    seen: dict[str, str] = {}
    for option, name in named.items():
        path = Path(name)
        parent = path.parent if str(path.parent) else Path(".")
        try:
            kind = output_kind(name)
        except OSError as exc:
            raise ConfigError(f"output path {name}: {exc.strerror or exc}") from None
        if kind == DIRECTORY:
            raise ConfigError(f"output path {name} is a directory; name a file")
        if kind == LINK:
            raise ConfigError(f"output path {name}: {LINK_REFUSED}")
        if kind == SPECIAL:  # written through, so its own permission counts, and /dev/null may take two outputs
            if not os.access(name, os.W_OK):
                raise ConfigError(f"output path {name}: not writable")
            continue
        if not parent.is_dir():
            raise ConfigError(f"output path {name}: directory {parent} does not exist")
        if not os.access(parent, os.W_OK):
            raise ConfigError(f"output path {name}: directory {parent} is not writable")
        same = os.path.normcase(os.path.realpath(name))
        if same in seen:
            raise ConfigError(f"{seen[same]} and {option} name the same file ({name}); give each output its own")
        seen[same] = option


def review_change_set(change_set: ChangeSet, snapshot: Snapshot, settings: Settings,
                      on_event: Callable[[str, str, str], None], environ: Mapping[str, str], started: float,
                      shard: str | None,
                      on_budget: Callable[[Budget], None] | None = None,
                      memory: MemoryStore | None = None,
                      dismissed: Sequence[Dismissal] = (),
                      intent: _Intent | None = None,
                      agent: Agent | None = None) -> tuple[ReviewResult, dict[str, str]]:
    """The review with filter mode and suppressions applied, and the reviewed text of every file with
    a finding (inline markers and SARIF line hashes read it)."""
    selected = _select(change_set, snapshot, settings, shard)
    coverage = [FileCoverage(s.change.path, "skipped", s.reason, incomplete=s.incomplete)
                for s in selected if s.action == "skip"]
    for item in coverage:
        on_event(item.path, "skipped", item.reason)
    to_review = [s.change for s in selected if s.action == "review"]
    from ocr_hook.guidance.resolve import resolve_guidance

    guidance = resolve_guidance(change_set, settings, [c.path for c in to_review])
    job_guidance: dict[str, FileGuidance] = {}
    if change_set.scan and to_review:
        on_event("", "estimate", _scan_estimate(selected, snapshot, settings, guidance, environ))
    checks = None
    if not change_set.scan:  # (a scan has no change for a check to judge)
        from ocr_hook.checks import may_have_checks

        commit_time = change_set.target is None
        linked = _read_tickets(change_set, settings, environ, started, commit_time)
        if linked is not None or may_have_checks(change_set):  # (else no check: none of their code is loaded)
            from ocr_hook.agent.checks_stage import plan_checks

            checks = plan_checks(change_set, commit_time, settings.tickets, linked)
    share = settings.checks_budget if checks is not None and checks.to_ask else 0.0
    gathered = _gather_intent(intent, change_set, settings, environ)
    reviewed_part: list[FileCoverage] = []
    if not to_review:
        result = ReviewResult(findings=[], files=coverage, scope=change_set.description)
    else:
        result, job_guidance = _run_agent(change_set, snapshot, to_review, settings, on_event, environ, started,
                                          on_budget, guidance, memory, gathered, agent, share)
        reviewed_part, result.files = result.files, coverage + result.files
    from ocr_hook.outcome import stopped_note

    stop = stopped_note(result.files)  # the files the clock left unread in the preparation counted too (62.10)
    if stop is not None:
        said = stopped_note(reviewed_part)
        result.notes = [stop if n == said else n for n in result.notes] if said in result.notes else \
            [*result.notes, stop]
    result.notes = guidance.notes + result.notes
    result.file_notes = guidance.file_notes + result.file_notes
    from ocr_hook.guidance.policy import apply_ignore_categories

    result = apply_ignore_categories(result, guidance)
    result.scope = change_set.description
    result.elapsed_s = time.monotonic() - started
    result.late_findings = settings.late_findings
    texts = _file_texts(result, snapshot)
    if result.findings and (settings.baseline or dismissed):  # a moved file's findings keep their names (62.6)
        from ocr_hook.findings.moves import with_earlier_names, written_files

        written = written_files(change_set.repo_root, settings.baseline,
                                settings.dismissals_file if dismissed else None)
        result.findings = with_earlier_names(result.findings, change_set.repo_root, change_set.target,
                                             guidance.revision, written, settings.max_file_bytes)
    _apply_dismissals(result, dismissed, guidance, settings)
    result = _apply_policies(result, change_set, texts, settings, guidance.revision)
    _name_exemptions(result, change_set, selected, texts, dismissed, guidance, settings)
    if checks is not None and checks.checks:
        _evaluate_checks(result, checks, change_set, snapshot, settings, environ, started, gathered,
                         agent is None, on_budget,
                         given=getattr(agent, "check_verdicts", None))  # a host agent's (delegate finish)
    if memory is not None:
        _remember(memory, result, snapshot, settings, job_guidance, _run_facts(result, change_set, texts, environ))
    return result, texts


def _read_tickets(change_set: ChangeSet, settings: Settings, environ: Mapping[str, str], started: float,
                  commit_time: bool) -> TicketsRead | None:
    """The linked tickets (issue 60), or None when the built-in check has nothing to say (tickets_read.plan)."""
    if settings.tickets.mode == "off" or (commit_time and settings.tickets.when != "commit"):
        return None  # (before any import: a commit-time review's idle path loads nothing for tickets)
    from ocr_hook.publish.tickets_read import plan, read

    planned = plan(change_set, settings.tickets, environ, commit_time)
    if planned is None:
        return None
    from pathlib import Path

    return read(environ, started + settings.timeout, Path(change_set.repo_root), settings.tickets, planned.texts,
                forge=planned.forge)


def _evaluate_checks(result: ReviewResult, plan: ChecksPlan, change_set: ChangeSet, snapshot: Snapshot,
                     settings: Settings, environ: Mapping[str, str], started: float,
                     intent: tuple[str, str] | None, may_send: bool,
                     on_budget: Callable[[Budget], None] | None = None,
                     given: Mapping[str, CheckVerdict] | None = None) -> None:
    """The checks stage after the files' findings are final: the pass gets what the files' reviews left of
    --max-cost, --max-tokens and --timeout (at least its share, as they were held to the rest)."""
    from ocr_hook.agent.checks_stage import run_checks
    from ocr_hook.checks.overrides import overrides_for

    budget = None
    if may_send and plan.to_ask:
        from ocr_hook.budget.ledger import Budget

        spent = result.usage
        budget = Budget(max_cost_usd=max(0.0, settings.max_cost - spent.cost_usd),
                        max_tokens=max(0, settings.max_tokens - spent.input_tokens - spent.output_tokens
                                       - spent.cache_creation_input_tokens - spent.cache_read_input_tokens),
                        deadline=started + settings.timeout, pricing=settings.pricing, time_limit=settings.timeout)
        if on_budget is not None:  # the caller's stop (an MCP cancel) reaches the checks pass too
            on_budget(budget)
    cache = None
    if settings.cache and plan.to_ask:
        from ocr_hook.store.result_cache import ResultCache, run_cache_dir

        cache = ResultCache(run_cache_dir(settings.cache_dir, environ))
    rendered = None
    if intent is not None and intent[0].strip():
        from ocr_hook.context.intent import render

        rendered = render(*intent)[0]
    overrides = overrides_for(change_set.repo_root, settings.dismissals_file, change_set, environ)
    outcome = run_checks(plan, change_set, snapshot, settings, result.findings, environ, budget, intent=rendered,
                         cache=cache, overrides=overrides, given=given)
    result.checks = outcome.verdicts
    result.notes += outcome.notes
    if budget is not None and outcome.usage is not None:
        result.usage.add(outcome.usage)


def _select(change_set: ChangeSet, snapshot: Snapshot, settings: Settings, shard: str | None) -> list[Selected]:
    """The file selection of this run's share. The share is dealt before selection, so that max_files caps
    each shard of a CI matrix, not the whole tree; the agent still sees the whole change set (file_read_diff)."""
    from ocr_hook.changes.selection import select_files

    if shard:
        from ocr_hook.changes.shard import shard_change_set

        change_set = shard_change_set(change_set, shard)
    return select_files(change_set, snapshot, settings)


def _scan_estimate(selected: Sequence[Selected], snapshot: Snapshot, settings: Settings, guidance: GuidancePlan,
                   environ: Mapping[str, str]) -> str:
    """A scan's cost, said before its first request (preview's estimate), and where the run stops."""
    from ocr_hook.commands.preview import estimate_cost
    from ocr_hook.effort import profiles_for

    paths = [s.change.path for s in selected if s.action == "review"]
    estimate = estimate_cost(selected, snapshot, settings, guidance, profiles_for(paths, settings, environ))
    files = f"{len(paths)} file{'s' if len(paths) != 1 else ''}"
    tokens = estimate.input_tokens + estimate.output_tokens
    if estimate.cost_usd is None:
        line = f"scan: {files} to review, about {tokens:,} tokens (no price for {settings.model})"
    else:
        line = f"scan: {files} to review, about {tokens:,} tokens, at most ${estimate.cost_usd:.2f} at list price"
    over = []
    if estimate.cost_usd is None or estimate.cost_usd > settings.max_cost:
        over.append(f"max_cost ${settings.max_cost:.2f}")
    if tokens > settings.max_tokens:
        over.append(f"max_tokens {settings.max_tokens:,}")
    if not over:
        return line + f"; within max_cost ${settings.max_cost:.2f}"
    return (line + f"; the run stops at {' or '.join(over)}: files not reached are listed and the scan is "
            "incomplete (--shard I/N splits it, --max-cost raises the cap)")


def _run_facts(result: ReviewResult, change_set: ChangeSet, texts: Mapping[str, str], environ: Mapping[str, str],
               remembered: bool = True) -> RunFacts:
    """What `ocr-hook apply` needs of this review: the digest of the text of every file with a finding as this
    review read it (a finding's fix fits that text only), the files it did not finish, which index it read."""
    from ocr_hook.hookenv import temporary_index
    from ocr_hook.store.memory import RunFacts, source_digest

    return RunFacts(change_set.description, {path: source_digest(text) for path, text in texts.items()},
                    sorted({f.path for f in result.files if f.incomplete}),
                    change_set.target is None and not change_set.scan and temporary_index(environ), remembered)


def _remember_latest(root: str, result: ReviewResult, change_set: ChangeSet, texts: Mapping[str, str],
                     settings: Settings, environ: Mapping[str, str]) -> None:
    """A review that keeps no line of work is still the repository's latest: its findings when memory is on,
    else only that it happened, so `apply` and `dismiss` never take an older review's findings for its."""
    from ocr_hook.store.memory import record_latest
    from ocr_hook.store.result_cache import run_cache_dir

    try:
        error = record_latest(run_cache_dir(settings.cache_dir, environ), root, result.findings,
                              _run_facts(result, change_set, texts if settings.memory else {}, environ,
                                         remembered=settings.memory))
    except Exception as exc:  # a finished review stands: not recording it is a note (the store's own, or this)
        error = f"review memory: the latest review could not be recorded: {exc}"
    if error:
        result.notes.append(error)


def _remember(memory: MemoryStore, result: ReviewResult, snapshot: Snapshot, settings: Settings,
              guidance: Mapping[str, FileGuidance], run: RunFacts) -> None:
    """Record every file whose review completed, with its findings (memory stores the text as sent: masked),
    and this run as the repository's latest review, the unfinished files' findings with it."""
    from ocr_hook.agent import context_parts
    from ocr_hook.store.memory import FileReview

    done = {f.path: f.effort or "standard" for f in result.files
            if f.state in ("reviewed", "cached") and not f.incomplete}
    by_path: dict[str, list[Finding]] = {}
    for finding in result.findings:
        by_path.setdefault(finding.path, []).append(finding)
    files = []
    for path, effort in done.items():
        content = snapshot.read_text(path)
        if content is None:
            continue
        files.append(FileReview(path, content, context_parts(settings, guidance.get(path), effort),
                                by_path.get(path, [])))
    memory.record(files, result.findings, mask=_masked, run=run)
    if memory.last_error:
        result.notes.append(memory.last_error)


# The variable each CI system ocr_hook.cienv knows sets in every job (each system's RUNS_HERE; a test keeps them the
# same): without one, no system names a pull request, and a commit-time run's history entry needs none of cienv.
CI_SYSTEM_VARIABLES = ("GITHUB_ACTIONS", "GITLAB_CI", "BITBUCKET_BUILD_NUMBER", "TF_BUILD", "JENKINS_URL", "BUILDKITE")


def _record_history(memory: MemoryStore, result: ReviewResult, settings: Settings, environ: Mapping[str, str],
                    feedback: Mapping[str, Mapping[str, int]]) -> None:
    """One history entry for `ocr-hook outcomes` (DESIGN.md 18), beside the memory of the same review."""
    from ocr_hook.hookenv import commit_time
    from ocr_hook.tally.entry import entry_of

    request = None
    if any(environ.get(name) for name in CI_SYSTEM_VARIABLES):  # outside CI no request: cienv stays unloaded
        from ocr_hook.cienv import request_number

        request = request_number(environ)
    source = "commit" if commit_time(environ) else ("ci" if request or environ.get("CI") else "manual")
    entry = entry_of(result, at=time.time(), source=source, change=memory.line, request=request,
                     model=settings.model, feedback=feedback)
    if entry is None:
        return
    from ocr_hook.store import history
    from ocr_hook.store.result_cache import run_cache_dir

    # (the cache directory as text: JsonFileStore.base would load pathlib on a cached run's light path)
    error = history.record(run_cache_dir(settings.cache_dir, environ), memory.repo, entry)
    if error:
        result.notes.append(error)


def _masked(text: str) -> str:
    """The text as the model was sent it. Loaded only when memory writes: an unchanged re-run masks nothing."""
    from ocr_hook.secrets_mask import mask_secrets

    return mask_secrets(text)[0]


def _apply_dismissals(result: ReviewResult, dismissed: Sequence[Dismissal], guidance: GuidancePlan,
                      settings: Settings) -> None:
    """Suppression follows the work tree's dismissals file; the entries the trusted revision lacks are named."""
    if not dismissed:
        return
    import datetime

    from ocr_hook.findings import dismissals
    from ocr_hook.outcome import FileNote

    result.findings, notes = dismissals.apply(result.findings, dismissed, datetime.date.today(),
                                              settings.dismissals_file)
    added = dismissals.added_note(dismissed, guidance.trusted_dismissals, settings.dismissals_file,
                                  guidance.revision_label)
    if added is not None:
        notes.append(added)
        result.file_notes.append(FileNote(settings.dismissals_file, added))
    result.notes += notes


def _run_agent(change_set: ChangeSet, snapshot: Snapshot, files: Sequence[FileChange], settings: Settings,
               on_event: Callable[[str, str, str], None], environ: Mapping[str, str], started: float,
               on_budget: Callable[[Budget], None] | None,
               guidance: GuidancePlan | None = None,
               memory: MemoryStore | None = None,
               intent: tuple[str, str] | None = None,
               agent: Agent | None = None, checks_share: float = 0.0) -> tuple[ReviewResult, dict[str, FileGuidance]]:
    # Imported here so that `review` with nothing to review never loads the agent (or the SDK).
    from ocr_hook.agent import FileGuidance, ReviewJob, review_files
    from ocr_hook.budget.ledger import Budget
    from ocr_hook.store.result_cache import ResultCache, run_cache_dir

    keep = 1.0 - checks_share  # the checks' share of the run's limits is left to their pass (DESIGN.md 20)
    budget = Budget(max_cost_usd=settings.max_cost * keep, max_tokens=int(settings.max_tokens * keep),
                    deadline=started + settings.timeout * keep, pricing=settings.pricing, time_limit=settings.timeout)
    if on_budget is not None:
        on_budget(budget)
    if change_set.scan:
        on_event = _scan_progress(on_event, len(files), budget)
    cache = None
    if settings.cache:
        # Room for every file of a large scan, under two configurations and the pack memo (issue 55.2).
        cache = ResultCache(run_cache_dir(settings.cache_dir, environ), keep=3 * len(files))
    job = ReviewJob(change_set=change_set, snapshot=snapshot, files=files, settings=settings, budget=budget,
                    cache=cache, on_event=on_event, environ=environ, intent=intent)
    if guidance is not None:
        job.guidance = {path: FileGuidance(sections, shared) for path, (sections, shared)
                        in guidance.prompt_guidance([f.path for f in files]).items()}
    if memory is not None:
        job.memory, job.memory_id = memory.remembered(), memory.record_key
    return (agent or review_files)(job), dict(job.guidance)


def _scan_progress(on_event: Callable[[str, str, str], None], total: int,
                   budget: Budget) -> Callable[[str, str, str], None]:
    """A scan runs for many files: each file's end also says how far the run is and what it has cost."""
    import threading

    lock, ended = threading.Lock(), [0]

    def event(path: str, kind: str, detail: str) -> None:
        if kind in ("done", "cached", "failed", "skipped"):
            with lock:
                ended[0] += 1
                count = ended[0]
            detail = f"{detail}; {count}/{total} files, ${budget.spent_usd:.2f} so far"
        on_event(path, kind, detail)

    return event


def _apply_policies(result: ReviewResult, change_set: ChangeSet, texts: Mapping[str, str],
                    settings: Settings, revision: str | None = None) -> ReviewResult:
    from ocr_hook.findings.suppress import apply_suppressions, load_baseline

    trusted = None
    if settings.baseline:  # a bad file is an error
        from ocr_hook.findings.exemptions import trusted_baseline

        trusted = trusted_baseline(change_set, settings, revision)  # a range: the trusted revision's (issue 58.4)
    baseline = trusted.honoured if trusted is not None else (
        load_baseline(settings.baseline) if settings.baseline else ())
    if not result.findings:  # a clean (e.g. cached) run need not load the filter and its anchoring code
        return result
    from ocr_hook.findings import filter_mode

    kept, dropped = filter_mode.apply(result.findings, change_set.by_path(), settings.filter_mode)
    if dropped:
        result.dropped["filter_mode"] = result.dropped.get("filter_mode", 0) + dropped
    from ocr_hook.findings.fixes import settle

    result.findings = settle(apply_suppressions(kept, baseline, texts))
    if trusted is not None:
        from ocr_hook.findings.exemptions import baseline_notes

        result.notes += baseline_notes(result.findings, trusted, settings.baseline or "")
    return result


def _name_exemptions(result: ReviewResult, change_set: ChangeSet, selected: Sequence[Selected],
                     texts: Mapping[str, str], dismissed: Sequence[Dismissal], guidance: GuidancePlan,
                     settings: Settings) -> None:
    """What the change under review does to exempt its own code, named in every output; under
    `change_exemptions: block` each fails the gate (issue 58, DESIGN.md 5)."""
    if change_set.target is None or change_set.scan:  # exemptions.applies, asked before the import: a commit's
        return  # review (the idle path) has no trusted side to hold the change's own exemptions against
    from ocr_hook.changes.selection import load_rules
    from ocr_hook.findings import exemptions
    from ocr_hook.outcome import FileNote

    found = [*exemptions.skipped_files(change_set, selected, load_rules(settings), guidance.revision),
             *exemptions.silenced_findings(result.findings, change_set, texts, dismissed,
                                           guidance.trusted_dismissals)]
    block = settings.change_exemptions == "block"
    for item in found:
        item = item._replace(blocking=block)
        result.exemptions.append(item)
        text = exemptions.note(item)
        result.notes.append(text)
        result.file_notes.append(FileNote(item.path, text))


def _file_texts(result: ReviewResult, snapshot: Snapshot) -> dict[str, str]:
    texts: dict[str, str] = {}
    for path in sorted({f.path for f in result.findings}):
        text = snapshot.read_text(path)
        if text is not None:
            texts[path] = text
    return texts


def report(result: ReviewResult, change_set: ChangeSet, texts: Mapping[str, str], settings: Settings,
           progress: Progress, environ: Mapping[str, str], *, scope_kind: str = "staged",
           patch_command: str | None = None, rerun: str | None = None) -> int:
    from ocr_hook.reports import render, renderer

    # A file that cannot be written now (its directory went away, the disk is full) must not turn a finished,
    # paid review into exit 2: the verdict's code stands, the report goes to standard output, one line says so.
    unwritten: list[tuple[str, str, str]] = []  # (format, text, the error)
    if settings.patch_output:  # first: what it leaves out becomes a note in every other report
        from ocr_hook.reports.patch import build_patch

        patch, patch_notes = build_patch(result.findings, texts)
        result.notes += patch_notes
        _write_output(settings.patch_output, "patch", patch, unwritten)
    color = settings.format == "text" and sys.stdout.isatty() and "NO_COLOR" not in environ
    ctx = report_context(result, change_set, texts, settings, color=color,
                         step_summary_path=environ.get("GITHUB_STEP_SUMMARY") if settings.format == "github" else None,
                         environ=environ, scope_kind=scope_kind, patch_command=patch_command, rerun=rerun)
    for fmt, path in (("sarif", settings.sarif_output), ("json", settings.json_output),
                      ("gitlab", settings.gitlab_output)):
        if path:
            _write_output(path, fmt, renderer(fmt)(result, ctx), unwritten)
    # The live status line goes first, so the report starts on a line of its own. The text report
    # ends with the summary and verdict already; other formats get them on standard error.
    if settings.format == "text":
        progress.finish()
    elif not progress.quiet:  # (a quiet run prints neither line: no need to build them)
        from ocr_hook.reports.text import summary_line

        progress.finish(summary_line(result), ctx.gate.line if ctx.gate is not None else "")
    sys.stdout.write(render(settings.format, result, ctx))
    from ocr_hook.commands.progress import sanitise

    for fmt, text, error in unwritten:
        where = "is on standard output already" if fmt == settings.format else "follows on standard output"
        if fmt != settings.format:
            sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        sys.stderr.write(f"ocr-hook: {sanitise(error)}: the {fmt} report could not be written; it {where}\n")
    sys.stdout.flush()
    return ctx.exit_code


def _write_output(path: str, fmt: str, text: str, unwritten: list[tuple[str, str, str]]) -> None:
    from ocr_hook.store.atomic import ReportWriteError, write_atomic

    try:
        write_atomic(path, text)
    except ReportWriteError as exc:
        unwritten.append((fmt, text, str(exc)))


def _shell_program(environ: Mapping[str, str] | None) -> str:
    """How the user's shell runs ocr-hook, for every command a report prints (pre-commit's own copy when nothing
    else is on PATH: DESIGN.md 19)."""
    from ocr_hook.hookenv.program import program

    return program(environ or {})


def report_context(result: ReviewResult, change_set: ChangeSet, texts: Mapping[str, str], settings: Settings, *,
                   color: bool = False, step_summary_path: str | None = None,
                   environ: Mapping[str, str] | None = None, scope_kind: str | None = None,
                   patch_command: str | None = None, rerun: str | None = None) -> ReportContext:
    """What every report of this run needs, the gate's exit code included, and for a blocked run what to do
    next (`environ` says whether pre-commit runs us; without it no hook is named)."""
    from ocr_hook import gate
    from ocr_hook.reports import ReportContext

    decided = gate.decide(result, settings.fail_on, settings.on_error)  # once: every report reads it
    code = decided.exit_code
    pre_commit = environ is not None and commit_time(environ)
    steps: tuple[str, ...] = ()
    if code == gate.EXIT_BLOCKING:
        from ocr_hook.reports.hints import next_steps

        kind = scope_kind or (SCAN if change_set.scan else "staged" if change_set.target is None else "base")
        skip = None
        # A push review runs from a pre-push hook (by hand it has no range): lefthook's, husky's or a plain one
        # is no commit-time review (git names no index for a push), yet its skip line is still that hook's.
        if environ is not None and (pre_commit or kind == "push"):
            from ocr_hook.commands.doctor_hooks import running_manager
            from ocr_hook.hookenv import skip_hint

            skip = skip_hint(running_manager(change_set.repo_root, kind, environ), kind, environ)
        ci = None
        if environ is not None and not pre_commit:  # a CI job's hint speaks of the branch, not its checkout
            from ocr_hook.cienv import running

            ci = running(environ)
        shell_program = _shell_program(environ)
        steps = next_steps(list(decided.blocking), scope_kind=kind,
                           pre_commit=pre_commit, skip=skip, patch_output=settings.patch_output, ci=ci,
                           patch_command=patch_command, rerun=rerun, program=shell_program,
                           json_output=settings.json_output, dismissals_file=settings.dismissals_file,
                           memory=settings.memory)  # (every scope's review is memory's latest: apply, dismiss)
        from ocr_hook.reports.hints import check_steps

        checks = check_steps([c.name for c in decided.blocking_checks], base_ref=change_set.base_ref, ci=ci,
                             dismissals_file=settings.dismissals_file, program=shell_program)
        steps = (*(steps or ("What to do next:",) if checks else steps), *checks)
    return ReportContext(
        repo_root=change_set.repo_root, tool_version=__version__, fail_on=settings.fail_on,
        on_error=settings.on_error, exit_code=code, gate=decided,
        sarif_category=settings.sarif_category, color=color, file_texts=texts,
        step_summary_path=step_summary_path, next_steps=steps, brief=pre_commit, filter_mode=settings.filter_mode,
        program=_shell_program(environ),
    )
