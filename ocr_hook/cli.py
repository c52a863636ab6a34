"""The command line: parse, load settings, hand over to a command, turn fatal errors into exit codes.

Kept thin and light: nothing here imports the agent or the SDK at start-up.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable
from typing import Any

import click

from ocr_hook import __version__
from ocr_hook.changes.scope import SCOPE_REFS, Scope, ScopeConflict, ScopeIncomplete, choose_scope
from ocr_hook.errors import INTERNAL_ERROR_EXIT, FatalError

# Shared, not one per option: each click.Path asks gettext for its name, and gettext looks for a catalogue
# on disk every time it is asked (a dozen stats a run for nothing).
_FILE = click.Path(dir_okay=False)
_PATH = click.Path()
_EXISTING_FILE = click.Path(exists=True, dir_okay=False)


def _scope_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--staged", "scope_staged", is_flag=True,
                     help="Review the index against HEAD (the default)."),
        click.option("--base", "scope_base", metavar="REF",
                     help="Review merge-base(REF, HEAD)..HEAD, as a CI job on a branch does; `auto`: the "
                          "pull/merge request's base from the CI system's variables."),
        click.option("--from", "scope_from", metavar="REF", help="Review REF..--to (both needed)."),
        click.option("--to", "scope_to", metavar="REF", help="End of the --from range."),
        click.option("--commit", "scope_commit", metavar="SHA", help="Review one commit against its parent."),
        click.option("--push", "scope_push", is_flag=True,
                     help="Review what is being pushed: PRE_COMMIT_FROM_REF..PRE_COMMIT_TO_REF under "
                          "pre-commit, else each ref of the pre-push lines git gives on standard input."),
        click.option("--config", "config_file", metavar="FILE", type=_FILE,
                     help="Settings file instead of .ocr-hook.yaml at the repository root."),
        click.argument("paths", nargs=-1, type=_PATH),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


_FLAG_OF_SCOPE = {"staged": "--staged", "base": "--base", "range": "--from/--to", "commit": "--commit",
                  "push": "--push"}
_FLAG_OF_REF = {"base": "--base", "from_ref": "--from", "to_ref": "--to", "commit": "--commit"}


def scope_from_flags(staged: bool, base: str | None, from_ref: str | None, to_ref: str | None,
                     commit: str | None, push: bool) -> Scope:
    named = [kind for kind, on in (("staged", staged), ("push", push)) if on]
    try:
        # An empty ref counts as not given, as it always has on the command line.
        return choose_scope(named, base=base or None, from_ref=from_ref or None, to_ref=to_ref or None,
                            commit=commit or None)
    except ScopeConflict as exc:
        if set(exc.kinds) == {"staged", "push"}:  # `args: [--push]` on the `ocr-hook` id, which runs --staged
            raise click.UsageError("choose one scope, got --staged and --push: for pushes use the hook id "
                                   "`ocr-hook-push` (the `ocr-hook` id runs `review --staged`)") from None
        raise click.UsageError(f"choose one scope, got {' and '.join(_FLAG_OF_SCOPE[k] for k in exc.kinds)}") from None
    except ScopeIncomplete as exc:
        flags = [_FLAG_OF_REF[ref] for ref in SCOPE_REFS[exc.kind]]
        raise click.UsageError(f"{' and '.join(flags)} go together") from None


def _scope(kw: dict[str, Any]) -> Scope:
    return scope_from_flags(kw.pop("scope_staged"), kw.pop("scope_base"), kw.pop("scope_from"),
                            kw.pop("scope_to"), kw.pop("scope_commit"), kw.pop("scope_push"))


_verbose = False  # --verbose: an internal error also prints its traceback


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="ocr-hook")
@click.option("--verbose", is_flag=True, help="On an internal error (exit 4), also print the traceback.")
def cli(verbose: bool) -> None:
    """An LLM code reviewer for pre-commit and CI.

    Exit codes: 0 clean, 1 blocking findings, 2 usage/config/git error, 3 review incomplete, 4 internal error.
    """
    global _verbose
    _verbose = verbose


@cli.command()
@_scope_options
@click.option("--format", "format_", type=click.Choice(["text", "json", "sarif", "github", "gitlab"]),
              help="What to print on standard output.")
@click.option("--sarif-output", metavar="FILE", help="Also write SARIF 2.1.0 to FILE.")
@click.option("--json-output", metavar="FILE", help="Also write the JSON report to FILE.")
@click.option("--gitlab-output", metavar="FILE", help="Also write GitLab Code Quality JSON to FILE.")
@click.option("--patch-output", metavar="FILE",
              help="Also write every suggested fix as one patch to FILE (for git apply; empty when none).")
@click.option("--fail-on", type=click.Choice(["critical", "high", "medium", "low", "never"]),
              help="Lowest severity that fails the run (default high).")
@click.option("--on-error", type=click.Choice(["fail", "warn"]),
              help="An incomplete review exits 3 (fail, default) or 0 with a warning (warn).")
@click.option("--filter-mode", type=click.Choice(["added", "diff_context", "file", "nofilter"]),
              help="Which findings to keep by where they are (reviewdog's meanings; default diff_context).")
@click.option("--model", help="Model for the review loop.")
@click.option("--provider", type=click.Choice(["auto", "anthropic", "bedrock", "vertex", "claude-code"]),
              help="Who answers the review: the Messages API (anthropic, bedrock, vertex) or Claude Code; auto "
                   "(default): the API key when there is one, else Claude Code's login.")
@click.option("--effort", type=click.Choice(["auto", "quick", "standard", "deep"]),
              help="How deep each file's review goes (default auto: quick in a git hook, standard in CI "
                   "and elsewhere, risky paths one level deeper).")
@click.option("--max-cost", type=float, metavar="USD", help="Cost ceiling for the whole run.")
@click.option("--max-tokens", type=int, metavar="N", help="Token ceiling for the whole run.")
@click.option("--max-files", type=int, metavar="N",
              help="Files reviewed at most (default 200 for a review; a scan has no cap unless one is set).")
@click.option("--timeout", type=float, metavar="SECONDS", help="Wall-clock deadline for the whole run.")
@click.option("--concurrency", type=int, metavar="N", help="Files reviewed at once.")
@click.option("--no-cache", is_flag=True, default=None, help="Neither read nor write the result cache.")
@click.option("--cache-dir", metavar="DIR", help="Where the result cache lives (e.g. a CI cache path).")
@click.option("--no-memory", is_flag=True, default=None,
              help="Review from scratch: neither read nor write review memory (carried, late, resolved).")
@click.option("--late-findings", type=click.Choice(["advisory", "block"]),
              help="Whether findings raised now on lines unchanged since the last review block (default advisory).")
@click.option("--no-review-filter", is_flag=True, default=None, help="Keep every comment; skip the filter request.")
@click.option("--no-context", is_flag=True, default=None,
              help="No context pack (definitions used, callers) and no intent from CI or commit messages.")
@click.option("--intent", metavar="TEXT|@FILE",
              help="What the change is for (data for the reviewer, never instructions); @FILE reads it from FILE.")
@click.option("--baseline", metavar="FILE", help="Fingerprints of findings to report as suppressed.")
@click.option("--shard", metavar="I/N", help="Review only share I of N of the files (CI matrix).")
@click.option("-q", "--quiet", is_flag=True, help="No progress on standard error.")
@click.option("--no-warm", is_flag=True, help="Run in this process, not in the warm worker (see `ocr-hook warm`).")
@click.option("--verbose", is_flag=True,
              help="Say whether the warm worker served the run and why not; an internal error prints its traceback.")
def review(**kw: Any) -> None:
    """Review the change and gate on the findings."""
    _run_review(_scope(kw), kw)


def _run_review(scope: Scope, kw: dict[str, Any], baseline_out: str | None = None) -> None:
    """`review` and `scan`: their options (scope options already taken) into the review command."""
    from ocr_hook.commands import review as review_cmd

    global _verbose
    kw.pop("no_warm")  # read before click, by ocr_hook.warm.client (and --verbose too)
    _verbose = kw.pop("verbose") or _verbose
    paths, config_file, quiet, shard = kw.pop("paths"), kw.pop("config_file"), kw.pop("quiet"), kw.pop("shard")
    kw["format"] = kw.pop("format_")
    if kw.pop("no_cache"):
        kw["cache"] = False
    if kw.pop("no_memory", None):
        kw["memory"] = False
    if kw.pop("no_review_filter"):
        kw["review_filter"] = False
    if kw.pop("no_context"):
        kw["context"] = False
    intent = kw.pop("intent")
    if intent is not None:
        from ocr_hook.context.intent import read_flag

        intent = read_flag(intent)
    if scope.kind == "push":
        sys.exit(review_cmd.run_push(paths, config_file, kw, quiet=quiet, shard=shard, intent=intent))
    sys.exit(review_cmd.run(scope, paths, config_file, kw, quiet=quiet, shard=shard, intent=intent,
                            baseline_out=baseline_out))


# `scan` takes review's options but not its diff scopes (nor review memory, which follows a line of work).
_NOT_FOR_SCAN = frozenset({"scope_staged", "scope_base", "scope_from", "scope_to", "scope_commit", "scope_push",
                           "no_memory", "late_findings"})


@cli.command(epilog="Adopting ocr-hook on existing code: `ocr-hook scan --baseline-output .ocr-hook/baseline.json`, "
                    "commit the file, then review with --baseline .ocr-hook/baseline.json: only new findings gate.")
@click.option("--rev", metavar="REV", help="Scan the files as they stand at this revision (default HEAD).")
@click.option("--staged", "scan_staged", is_flag=True, help="Scan the files as they stand in the index.")
@click.option("--baseline-output", metavar="FILE",
              help="Write every finding's fingerprint to FILE (for --baseline) instead of gating on them.")
def scan(**kw: Any) -> None:
    """Review whole files as if each were added: every selected file under PATHS (default: the whole
    repository) at HEAD, --rev REV or the index. Selection, budgets, outputs, gate and cache as for review."""
    from ocr_hook.changes.scope import ScopeConflict, scan_scope

    try:
        scope = scan_scope(kw.pop("rev") or None, staged=kw.pop("scan_staged"))
    except ScopeConflict:
        raise click.UsageError("choose one of --rev and --staged") from None
    baseline_out = kw.pop("baseline_output")
    if baseline_out:  # adoption: the findings are recorded, not gated (an incomplete scan still says so)
        kw["fail_on"] = "never"
    _run_review(scope, kw, baseline_out=baseline_out)


scan.params[:0] = [p for p in review.params if p.name not in _NOT_FOR_SCAN]


@cli.command()
@_scope_options
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text",
              help="Text for people, JSON for scripts.")
@click.option("--effort", type=click.Choice(["auto", "quick", "standard", "deep"]),
              help="Show the profiles a review with this --effort would use.")
@click.option("--scan", "scan_", is_flag=True,
              help="Preview `ocr-hook scan`: whole files at HEAD (--rev REV, or the index with --staged).")
@click.option("--rev", metavar="REV", help="With --scan: the revision to scan.")
@click.option("--shard", metavar="I/N", help="Show only share I of N of the files, as `review --shard` deals them.")
@click.option("--max-files", type=int, metavar="N", help="Files reviewed at most, as the review would take it.")
def preview(**kw: Any) -> None:
    """Show what would be reviewed, what is skipped and why, each file's effort profile, and the estimated
    cost. Calls no model."""
    from ocr_hook.commands import preview as preview_cmd

    scope = _preview_scope(kw)
    sys.exit(preview_cmd.run(scope, kw.pop("paths"), kw.pop("config_file"), kw.pop("format_"),
                             flags={"effort": kw.pop("effort"), "max_files": kw.pop("max_files")},
                             shard=kw.pop("shard")))


@cli.command("checks")
@_scope_options
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text",
              help="Text for people, JSON for scripts.")
def checks_command(**kw: Any) -> None:
    """List the team's checks (.ocr-hook/checks/*.md, from the trusted revision) that apply to the change, their
    mode and what evaluating them would cost. Calls no model."""
    from ocr_hook.commands import checks as checks_cmd

    scope = _scope(kw)
    sys.exit(checks_cmd.run(scope, kw.pop("paths"), kw.pop("config_file"), kw.pop("format_")))


def _preview_scope(kw: dict[str, Any]) -> Scope:
    scan_, rev = kw.pop("scan_"), kw.pop("rev")
    if not scan_:
        if rev:
            raise click.UsageError("--rev goes with --scan")
        return _scope(kw)
    from ocr_hook.changes.scope import scan_scope

    staged = kw["scope_staged"]
    others = [flag for flag, key in (("--base", "scope_base"), ("--from", "scope_from"), ("--to", "scope_to"),
                                     ("--commit", "scope_commit"), ("--push", "scope_push")) if kw[key]]
    if others or (staged and rev):
        raise click.UsageError(f"--scan takes --rev or --staged, not {' and '.join(others) or '--rev and --staged'}")
    _scope(kw)  # (takes the scope options out)
    return scan_scope(rev, staged=staged)


@cli.command()
@_scope_options
@click.option("-o", "--output", default=".ocr-hook-baseline.json", show_default=True, metavar="FILE",
              help="Where to write the fingerprints.")
@click.option("-q", "--quiet", is_flag=True, help="No progress on standard error.")
def baseline(**kw: Any) -> None:
    """Review the change and record its findings' fingerprints, so later reviews with --baseline
    report them as suppressed instead of failing on them."""
    from ocr_hook.commands import review as review_cmd

    scope = _scope(kw)
    sys.exit(review_cmd.run(scope, kw.pop("paths"), kw.pop("config_file"), {"fail_on": "never"},
                            quiet=kw.pop("quiet"), baseline_out=kw.pop("output")))


@cli.command()
@_scope_options
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text",
              help="Text for people, JSON for scripts.")
def rules(**kw: Any) -> None:
    """Show which project guidance (REVIEW.md, AGENTS.md/CLAUDE.md, rules) applies to each changed file,
    and from which revision. Calls no model."""
    from ocr_hook.commands import rules as rules_cmd

    scope = _scope(kw)
    sys.exit(rules_cmd.run(scope, kw.pop("paths"), kw.pop("config_file"), kw.pop("format_")))


@cli.command()
@click.option("--config", "config_file", metavar="FILE", type=_FILE,
              help="Settings file instead of .ocr-hook.yaml at the repository root.")
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text",
              help="Text for people, JSON for scripts.")
@click.option("--probe", is_flag=True,
              help="Also review a built-in sample of a few lines through the normal loop (at most 3 requests, "
                   "$0.05): does the model call the tools, does prompt caching work, how fast is the first reply.")
def doctor(config_file: str | None, format_: str, probe: bool) -> None:
    """Check, one line each, what the hook needs: git, settings, prices, credentials (never shown),
    endpoint and model, cache directory, pre-commit hook. Sends nothing without credentials.
    Exit 0 with no FAIL, else 2."""
    from ocr_hook.commands import doctor as doctor_cmd

    sys.exit(doctor_cmd.run(config_file, format_, probe))


@cli.command()
@click.argument("ids", nargs=-1, metavar="ID...")
@click.option("--reason", metavar="TEXT",
              help="Why the finding is wrong; recorded, and taught to later reviews of the files in --paths.")
@click.option("--paths", "paths", multiple=True, metavar="GLOB",
              help="Where the reason teaches (gitignore-style; repeat for more). Default: the finding's file.")
@click.option("--expires", metavar="YYYY-MM-DD", help="From this date on the dismissal no longer suppresses.")
@click.option("--from", "from_file", metavar="FILE", type=_FILE,
              help="Look the ids up in this JSON report instead of the last review's memory.")
@click.option("--config", "config_file", metavar="FILE", type=_FILE,
              help="Settings file instead of .ocr-hook.yaml at the repository root.")
@click.option("--from-forge", "from_forge", is_flag=False, flag_value="auto", default=None,
              type=click.Choice(["auto", "github", "gitlab", "bitbucket", "azure", "gitea"]),
              help="Keep the dismissals people made on this CI run's pull request (threads of ocr-hook's they "
                   "resolved), each with their reply as the reason; the forge from the CI variables, or named.")
@click.option("--timeout", type=click.FloatRange(min=1), default=120.0, show_default=True, metavar="SECONDS",
              help="With --from-forge: give up reading the pull request after this long.")
@click.option("--check", "check", metavar="NAME",
              help="Override one check (its file's stem) for this change instead: the pull request in CI, the staged "
                   "change, or with --base the branch's range; needs --reason (docs/checks.md).")
@click.option("--base", "base", metavar="REF", help="With --check: the change is this branch's range from REF.")
def dismiss(ids: tuple[str, ...], reason: str | None, paths: tuple[str, ...], expires: str | None,
            from_file: str | None, config_file: str | None, from_forge: str | None, timeout: float,
            check: str | None, base: str | None) -> None:
    """Record findings as wrong, with the reason, in the dismissals file (.ocr-hook/dismissed.yaml).

    ID is a finding's fingerprint or its first 8 or more characters (the text report shows them). Later
    reviews report the finding as dismissed and never block on it; once the file is committed, the reason
    teaches the reviewer. With --from-forge, the findings and reasons are those people dismissed on the pull
    request (IDs, if given, narrow them). Nothing is staged or committed."""
    from ocr_hook.commands import dismiss as dismiss_cmd

    if check is not None or base is not None:
        if check is None or ids or paths or expires or from_file or from_forge:
            raise click.UsageError("--check NAME --reason TEXT [--base REF] overrides one check; give no finding ids, "
                                   "--paths, --expires, --from or --from-forge with it")
        sys.exit(dismiss_cmd.run_check(check, reason, base, config_file))
    sys.exit(dismiss_cmd.run(ids, reason, paths, expires, from_file, config_file, from_forge=from_forge,
                             timeout=timeout))


@cli.command("apply")
@click.argument("ids", nargs=-1, metavar="[ID...]")
@click.option("--config", "config_file", metavar="FILE", type=_FILE,
              help="Settings file instead of .ocr-hook.yaml at the repository root.")
def apply_fixes(ids: tuple[str, ...], config_file: str | None) -> None:
    """Apply the last review's suggested fixes (all, or the findings ID...) to the work tree and the index.

    From what that review produced (review memory): no model is asked. A file changed since that review is
    refused (exit 2) and nothing is applied. Commit again: the review starts from the last one."""
    from ocr_hook.commands import apply as apply_cmd

    sys.exit(apply_cmd.run(ids, config_file))


@cli.command()
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text",
              help="Text for people, JSON for scripts.")
@click.option("--config", "config_file", metavar="FILE", type=_FILE,
              help="Settings file instead of .ocr-hook.yaml at the repository root.")
def dismissed(format_: str, config_file: str | None) -> None:
    """List the dismissals file's entries and which have expired."""
    from ocr_hook.commands import dismissed as dismissed_cmd

    sys.exit(dismissed_cmd.run(format_, config_file))


@cli.command()
@click.option("--since", default="30d", show_default=True, metavar="WHEN",
              help="Findings first raised from then on: a span before now (30d, 2w), a date (2026-11-01) or all.")
@click.option("--until", default=None, metavar="WHEN", help="Up to then (a date counts whole).")
@click.option("--pr", "requests", multiple=True, metavar="N",
              help="Only reviews of this pull/merge request (repeatable).")
@click.option("--source", "sources", multiple=True, type=click.Choice(["commit", "ci", "manual"]),
              help="Only commit-time reviews, CI reviews or reviews run by hand (repeatable; default all).")
@click.option("--format", "format_", type=click.Choice(["text", "json", "svg", "html"]), default="text",
              help="Text for people, JSON for tools, an SVG chart or an HTML page with it.")
@click.option("-o", "--output", metavar="FILE", help="Write to FILE instead of standard output.")
@click.option("--config", "config_file", metavar="FILE", type=_FILE,
              help="Settings file instead of .ocr-hook.yaml at the repository root.")
def outcomes(since: str, until: str | None, requests: tuple[str, ...], sources: tuple[str, ...], format_: str,
             output: str | None, config_file: str | None) -> None:
    """What became of the findings: raised, fixed, dismissed, open, and the addressed rate (from the review
    history in the cache directory)."""
    from ocr_hook.commands import outcomes as outcomes_cmd

    sys.exit(outcomes_cmd.run(since, until, requests, sources, format_, output, config_file))


@cli.command("merge-sarif")
@click.argument("inputs", nargs=-1, required=True, type=_EXISTING_FILE)
@click.option("-o", "--output", required=True, metavar="FILE", help="The merged SARIF file.")
def merge_sarif(inputs: tuple[str, ...], output: str) -> None:
    """Join the SARIF files of several --shard runs into one run GitHub accepts."""
    from ocr_hook.commands import merge_sarif as merge_cmd

    sys.exit(merge_cmd.run(inputs, output))


@cli.command("github-review")
@click.option("--from", "report", required=True, metavar="REPORT.json", type=_FILE,
              help="The review's --format json report (--json-output).")
def github_review(report: str) -> None:
    """Publish a report as one review on the GitHub pull request of this Actions run.

    Inline comments (with suggested changes) on the diff's lines, the rest in the review's body; a
    re-run does not repeat a comment. Needs GITHUB_TOKEN with pull-requests: write. Publishing never
    changes the gate: anything that stops it is one line on standard error and exit 0."""
    from ocr_hook.commands import github_review as github_review_cmd

    sys.exit(github_review_cmd.run(report))


@cli.command("publish")
@click.option("--from", "report", required=True, metavar="REPORT.json", type=_FILE,
              help="The review's --format json report (--json-output).")
@click.option("--to", "to", default="auto", show_default=True,
              type=click.Choice(["auto", "github", "gitlab", "bitbucket", "azure", "gitea"]),
              help="The forge; auto: from the CI run's variables.")
@click.option("--timeout", type=click.FloatRange(min=1), default=120, show_default=True, metavar="SECONDS",
              help="Give up publishing after this long (rate-limit waits included).")
def publish(report: str, to: str, timeout: float) -> None:
    """Publish a report on the merge/pull request of this CI run, as the forge's own review comments.

    Inline comments (with one-click suggestions where the forge has them) on the diff's lines, the rest
    in one summary; a re-run adds only what is new. Publishing never changes the gate: anything that
    stops it is one line on standard error and exit 0 (a --from file that is not a report: exit 2)."""
    from ocr_hook.commands import publish as publish_cmd

    sys.exit(publish_cmd.run(report, to, timeout=timeout))


@cli.command("mcp")
@click.option("--repo", metavar="PATH", help="The repository to serve (default: the current directory); "
                                             "the server reviews this repository only.")
def mcp_server(repo: str | None) -> None:
    """Serve the review and preview tools to coding agents over MCP (stdio).

    Needs the mcp extra (without it, it names the pip command that adds it). Standard output carries protocol
    messages only."""
    from ocr_hook.mcp_server import command as mcp_cmd

    sys.exit(mcp_cmd.run(repo))


@cli.command("lsp")
@click.option("--repo", metavar="PATH", help="The repository to serve (default: the current directory).")
@click.option("--from", "report", metavar="REPORT", type=_FILE,
              help="Show this report's findings (a --format json report or its SARIF, e.g. from CI) instead of "
                   "the last review's (review memory).")
@click.option("--poll", type=click.FloatRange(min=0.05, max=60), default=1.0, show_default=True, metavar="SECONDS",
              help="How often to look whether a review finished (one stat of a few files).")
def lsp_server(repo: str | None, report: str | None, poll: float) -> None:
    """Serve the last review to editors as a language server (stdio): diagnostics, fix and dismiss actions.

    Never asks a model on open, change or save; the ocr-hook.review command runs a review when invoked. Needs
    the editor extra (without it, it names the pip command that adds it)."""
    from ocr_hook.lsp import command as lsp_cmd

    sys.exit(lsp_cmd.run(repo, report, poll))


@cli.group()
def delegate() -> None:
    """Let the coding agent you run (Claude Code, Codex, Cursor, ...) be the reviewer: ocr-hook picks the files,
    writes each file's brief, answers the six review tools, anchors the comments and gates, and never calls a
    model itself (no key needed). start, then call for each file until task_done, then finish."""


@delegate.command("start")
@_scope_options
@click.option("--effort", type=click.Choice(["auto", "quick", "standard", "deep"]),
              help="How deep each file's review goes (its rounds); default as for review.")
@click.option("--intent", metavar="TEXT|@FILE",
              help="What the change is for (data for the reviewer, never instructions); @FILE reads it from FILE.")
def delegate_start(**kw: Any) -> None:
    """Print a session as JSON: its id, each file's brief and rounds, the skipped files and the tools."""
    from ocr_hook.commands import delegate as delegate_cmd

    scope = _scope(kw)
    intent = kw.pop("intent")
    if intent is not None:
        from ocr_hook.context.intent import read_flag

        intent = read_flag(intent)
    flags = {"effort": kw.pop("effort")} if kw.get("effort") else {}
    sys.exit(delegate_cmd.run_start(scope, kw.pop("paths"), kw.pop("config_file"), flags, intent))


@delegate.command("call")
@click.argument("session")
@click.option("--file", "path", required=True, metavar="PATH", help="The session's file this call is about.")
@click.argument("tool")
@click.argument("tool_input", required=False, metavar="[JSON]")
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text",
              help="The answer as the model would see it (text), or with the file's state (json).")
def delegate_call(session: str, path: str, tool: str, tool_input: str | None, format_: str) -> None:
    """Run one review tool (file_read, file_read_diff, file_find, code_search, code_comment, task_done) for
    one file of the session and print what the model would see. JSON is the tool's input; `-` reads it
    from standard input."""
    from ocr_hook.commands import delegate as delegate_cmd

    if tool_input == "-":
        tool_input = sys.stdin.read()
    sys.exit(delegate_cmd.run_call(session, path, tool, tool_input, format_))


@delegate.command("finish")
@click.argument("session")
def delegate_finish(**kw: Any) -> None:
    """Anchor, deduplicate, filter, suppress, remember, gate and report the session's comments exactly as
    `review` does; exit codes as review's (a file never closed with task_done DONE: 3)."""
    from ocr_hook.commands import delegate as delegate_cmd

    session, quiet = kw.pop("session"), kw.pop("quiet")
    kw["format"] = kw.pop("format_")
    if kw.pop("no_memory"):
        kw["memory"] = False
    sys.exit(delegate_cmd.run_finish(session, kw, quiet))


# `delegate finish` reports and gates as review does, so it takes review's own output and gate options.
_FOR_FINISH = ("format_", "sarif_output", "json_output", "gitlab_output", "patch_output", "fail_on", "on_error",
               "filter_mode", "baseline", "no_memory", "late_findings", "quiet")
delegate_finish.params[1:] = [p for p in review.params if p.name in _FOR_FINISH]


@cli.group()
def warm() -> None:
    """The warm worker that serves commit-time reviews (setting `warm`: auto, on, off)."""


@warm.command("status")
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text",
              help="Text for people, JSON for scripts.")
def warm_status(format_: str) -> None:
    """Show this user's warm workers: pid, version, idle time, socket."""
    from ocr_hook.warm import control

    sys.exit(control.status(format_))


@warm.command("start")
def warm_start() -> None:
    """Start this installation's worker now (unless it runs) and wait until it listens."""
    from ocr_hook.warm import control

    sys.exit(control.start())


@warm.command("stop")
def warm_stop() -> None:
    """Stop every warm worker of this user and wait until each has exited."""
    from ocr_hook.warm import control

    sys.exit(control.stop())


_terminated = 0  # the signal (SIGTERM, SIGHUP) that ended the run: the interrupt below exits 128 + it, not 130


def _on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM and SIGHUP (the terminal closed) take Ctrl-C's path: the SIGINT handler in force runs. Inside the
    review's event loop that is asyncio's, which cancels the run cleanly (a provider's child processes killed
    with it); a KeyboardInterrupt raised here instead would end whichever task happened to be running and asyncio
    would print its traceback. SIGINT ignored (nohup): raise."""
    global _terminated
    _terminated = signum
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:
        raise KeyboardInterrupt


def _error_line(message: str) -> None:
    """One line on standard error, whatever the message holds (a path, a server's text): control characters
    escaped, no workflow command live."""
    from ocr_hook.commands.progress import sanitise

    click.echo(f"ocr-hook: {sanitise(message)}", err=True)


def main(argv: list[str] | None = None) -> None:
    """Entry point: the one place a FatalError becomes a one-line message and its exit code, and any other
    exception a one-line internal error and exit 4 (the traceback only with --verbose)."""
    from ocr_hook.streams import make_safe

    for stream in (sys.stdout, sys.stderr):  # a cp1252 pipe or an ASCII console must never crash a run
        make_safe(stream)
    signal.signal(signal.SIGTERM, _on_sigterm)
    if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is signal.SIG_DFL:  # nohup's SIG_IGN stays
        signal.signal(signal.SIGHUP, _on_sigterm)
    try:
        cli.main(args=argv, prog_name="ocr-hook", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        # One line, like every other error; `--help` has the full usage.
        _error_line(f"error: {exc.format_message()}")
        sys.exit(2)
    except (click.exceptions.Abort, KeyboardInterrupt):  # click turns KeyboardInterrupt into Abort
        if _terminated:
            with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
                click.echo("ocr-hook: terminated", err=True)
            sys.exit(128 + _terminated)
        click.echo("ocr-hook: interrupted", err=True)
        sys.exit(130)
    except FatalError as exc:
        from ocr_hook.errors import NoReviewer

        first, *more = str(exc).split("\n") if isinstance(exc, NoReviewer) else [str(exc)]
        _error_line(f"error: {first}")
        if more:
            from ocr_hook.commands.progress import sanitise

            click.echo("".join(sanitise(line) + "\n" for line in more), err=True, nl=False)
        sys.exit(exc.exit_code)
    except Exception as exc:  # a bug of ours: never a traceback as the only word, never exit 1
        if _verbose:
            import traceback

            traceback.print_exc()
        detail = " ".join(str(exc).split())[:300]
        import os

        from ocr_hook.hookenv.program import program

        _error_line(f"internal error: {type(exc).__name__}{': ' + detail if detail else ''} (a bug in ocr-hook; "
                    f"`{program(os.environ)} --verbose ...` prints the traceback)")
        sys.exit(INTERNAL_ERROR_EXIT)
