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

# The commands a commit's hook never runs are defined in ocr_hook.cli_more (name → function there), which loads
# only when one of them is asked for or listed: a commit's review does not create their ~80 options (issue 62.9).
_MORE = {"apply": "apply_fixes", "baseline": "baseline", "checks": "checks_command", "delegate": "delegate",
         "dismiss": "dismiss", "dismissed": "dismissed", "doctor": "doctor", "github-review": "github_review",
         "lsp": "lsp_server", "mcp": "mcp_server", "merge-sarif": "merge_sarif", "outcomes": "outcomes",
         "preview": "preview", "publish": "publish", "rules": "rules", "warm": "warm"}


class _Commands(click.Group):
    """review and scan, defined here, and the commands of _MORE, loaded by name (click's lazy loading): cli_more
    imports this module, so it sits above it and is found by name rather than imported."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_MORE})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _MORE and cmd_name not in self.commands:
            import importlib

            self.add_command(getattr(importlib.import_module("ocr_hook.cli_more"), _MORE[cmd_name]), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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
