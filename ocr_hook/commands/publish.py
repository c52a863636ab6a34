"""`ocr-hook publish --from REPORT.json [--to auto|github|gitlab|bitbucket|azure|gitea]`: a finished review
where the forge's reviewers read it (DESIGN.md section 13); `github-review` is its GitHub case.

Publishing never changes the gate: not a merge/pull request, no token, the forge refusing or not
answering is one line on standard error and exit 0. Only a --from file that is not an ocr-hook JSON
report is an error (exit 2). Every line printed is masked with the token and made safe for a CI log.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ocr_hook.publish.report_input import ReportError, load_report

if TYPE_CHECKING:
    from ocr_hook.publish.plan import Routing

TOKEN_VARIABLES = ("GITHUB_TOKEN", "GITLAB_TOKEN", "GITEA_TOKEN", "BITBUCKET_ACCESS_TOKEN", "SYSTEM_ACCESSTOKEN")
DEFAULT_TIMEOUT_S = 120.0


def run(report_path: str, to: str = "auto", *, command: str = "publish", timeout: float = DEFAULT_TIMEOUT_S,
        environ: Mapping[str, str] | None = None) -> int:
    env = dict(os.environ if environ is None else environ)
    from ocr_hook.publish.publishing import checkout_root, publish, tracked

    checkout = checkout_root(Path.cwd())
    if checkout is not None and tracked(checkout, report_path):
        raise ReportError(f"{command}: {report_path}: git tracks this file, so the change itself can write it; "
                          "give the review's --json-output a path no commit holds")
    report = load_report(report_path, f"{command}: {report_path}")
    routing = _routing(checkout, env)
    say = _sayer(command, [env.get(name, "").strip() for name in TOKEN_VARIABLES])
    not_done = "review not published" if command == "github-review" else "nothing published"

    from ocr_hook.publish.api_client import ApiRefusal
    from ocr_hook.publish.forges import NotApplicable, Setup, detect, open_adapter

    try:
        forge = detect(env) if to == "auto" else to
        adapter = open_adapter(forge, Setup(env, time.monotonic() + timeout, checkout))
    except NotApplicable as exc:
        say(f"{not_done}{' on ' + exc.target if exc.target else ''}: {exc.reason}")
        return 0
    except ApiRefusal as exc:  # a token or URL refused before any request
        say(f"{not_done}: {exc}")
        return 0
    try:
        line = publish(adapter, report, checkout, routing)
    except NotApplicable as exc:  # the report is not of this request's head
        say(f"{not_done}{' on ' + exc.target if exc.target else ''}: {exc.reason}")
        return 0
    except (TypeError, ValueError, AttributeError, KeyError, OverflowError) as exc:
        # An answer of a shape the forge's API does not give (a string for an object, "one" for an id):
        # a refusal like any other, never a traceback or exit 4.
        say(f"{not_done} on {adapter.target}: {adapter.forge} answered with a shape its API does not describe "
            f"({exc.__class__.__name__}; its words are not quoted: they could hold anything)")
        return 0
    except ApiRefusal as exc:
        hint = adapter.hints.get(exc.status or 0) if exc.hint else None
        say(f"{not_done} on {adapter.target}: {exc}" + (f" ({hint})" if hint else ""))
        return 0
    finally:
        adapter.close()
    say(line)
    return 0


def _routing(checkout: Path | None, env: Mapping[str, str]) -> Routing:
    """Which findings go to the summary instead of inline (settings summary_below, summary_categories), from
    the settings as the review read them; settings that do not load (the review failed on them) give the
    shipped defaults: publishing never fails over them."""
    from ocr_hook.errors import ConfigError
    from ocr_hook.findings.model import Severity
    from ocr_hook.publish.plan import Routing
    from ocr_hook.settings import load

    try:
        settings = load(checkout, None, flags={}, environ=env)
    except ConfigError:  # the review said so already; publishing never fails over the settings: the defaults
        settings = load(None, None, flags={}, environ={})
    return Routing(Severity(settings.summary_below), frozenset(settings.summary_categories))


def _sayer(command: str, tokens: list[str]) -> Callable[[str], None]:
    from ocr_hook.publish.render import plain
    from ocr_hook.reports.base import neutralize_commands

    def say(line: str) -> None:
        # Nothing we print is built from a token; this only makes sure of it.
        for token in sorted((t for t in tokens if t), key=len, reverse=True):
            line = line.replace(token, "***")
        print(neutralize_commands(f"ocr-hook: {command}: {plain(line)}"), file=sys.stderr)

    return say
