"""The commands a commit's hook never runs (everything but review and scan), loaded by the command line's group
only when one of them is asked for or listed (ocr_hook.cli._Commands): a cached commit-time review does not create
their options, about 80 click objects (issue 62.9)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from ocr_hook.cli import _EXISTING_FILE, _FILE, _scope, _scope_options, review

if TYPE_CHECKING:
    from ocr_hook.changes.scope import Scope

@click.command()
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


@click.command("checks")
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


@click.command()
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


@click.command()
@_scope_options
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text",
              help="Text for people, JSON for scripts.")
def rules(**kw: Any) -> None:
    """Show which project guidance (REVIEW.md, AGENTS.md/CLAUDE.md, rules) applies to each changed file,
    and from which revision. Calls no model."""
    from ocr_hook.commands import rules as rules_cmd

    scope = _scope(kw)
    sys.exit(rules_cmd.run(scope, kw.pop("paths"), kw.pop("config_file"), kw.pop("format_")))


@click.command()
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


@click.command()
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


@click.command("apply")
@click.argument("ids", nargs=-1, metavar="[ID...]")
@click.option("--config", "config_file", metavar="FILE", type=_FILE,
              help="Settings file instead of .ocr-hook.yaml at the repository root.")
def apply_fixes(ids: tuple[str, ...], config_file: str | None) -> None:
    """Apply the last review's suggested fixes (all, or the findings ID...) to the work tree and the index.

    From what that review produced (review memory): no model is asked. A file changed since that review is
    refused (exit 2) and nothing is applied. Commit again: the review starts from the last one."""
    from ocr_hook.commands import apply as apply_cmd

    sys.exit(apply_cmd.run(ids, config_file))


@click.command()
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text",
              help="Text for people, JSON for scripts.")
@click.option("--config", "config_file", metavar="FILE", type=_FILE,
              help="Settings file instead of .ocr-hook.yaml at the repository root.")
def dismissed(format_: str, config_file: str | None) -> None:
    """List the dismissals file's entries and which have expired."""
    from ocr_hook.commands import dismissed as dismissed_cmd

    sys.exit(dismissed_cmd.run(format_, config_file))


@click.command()
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


@click.command("merge-sarif")
@click.argument("inputs", nargs=-1, required=True, type=_EXISTING_FILE)
@click.option("-o", "--output", required=True, metavar="FILE", help="The merged SARIF file.")
def merge_sarif(inputs: tuple[str, ...], output: str) -> None:
    """Join the SARIF files of several --shard runs into one run GitHub accepts."""
    from ocr_hook.commands import merge_sarif as merge_cmd

    sys.exit(merge_cmd.run(inputs, output))


@click.command("github-review")
@click.option("--from", "report", required=True, metavar="REPORT.json", type=_FILE,
              help="The review's --format json report (--json-output).")
def github_review(report: str) -> None:
    """Publish a report as one review on the GitHub pull request of this Actions run.

    Inline comments (with suggested changes) on the diff's lines, the rest in the review's body; a
    re-run does not repeat a comment. Needs GITHUB_TOKEN with pull-requests: write. Publishing never
    changes the gate: anything that stops it is one line on standard error and exit 0."""
    from ocr_hook.commands import github_review as github_review_cmd

    sys.exit(github_review_cmd.run(report))


@click.command("publish")
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


@click.command("mcp")
@click.option("--repo", metavar="PATH", help="The repository to serve (default: the current directory); "
                                             "the server reviews this repository only.")
def mcp_server(repo: str | None) -> None:
    """Serve the review and preview tools to coding agents over MCP (stdio).

    Needs the mcp extra (without it, it names the pip command that adds it). Standard output carries protocol
    messages only."""
    from ocr_hook.mcp_server import command as mcp_cmd

    sys.exit(mcp_cmd.run(repo))


@click.command("lsp")
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


@click.group()
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


@click.group()
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
