"""`ocr-hook delegate start|call|finish`: a host coding agent reviews, ocr-hook does the rest (DESIGN.md 15).

start and call print JSON (call: the answer as text, or JSON with --format json); finish is `review` from the
agent on: the same outputs, gate and exit codes, with the session's comments in place of a model's.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ocr_hook.changes.scope import Scope

if TYPE_CHECKING:
    from ocr_hook.commands.review import Reviewed
    from ocr_hook.delegate.session import Session
    from ocr_hook.settings import Settings


def run_start(scope: Scope, paths: Sequence[str], config_file: str | None, flags: Mapping[str, Any],
              intent: str | None) -> int:
    from ocr_hook.delegate import ops

    doc = ops.start(os.getcwd(), scope, paths, config_file, flags, os.environ, intent)
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    return 0


def run_call(session_id: str, path: str, tool: str, raw_input: str | None, fmt: str) -> int:
    from ocr_hook.delegate import ops

    answer = ops.call(os.getcwd(), session_id, path, tool, ops.parse_input(raw_input), os.environ)
    if fmt == "json":
        sys.stdout.write(json.dumps(answer._asdict(), indent=2) + "\n")
    else:
        sys.stdout.write(answer.text if answer.text.endswith("\n") else answer.text + "\n")
    return 0


def finish(session_id: str, flags: Mapping[str, Any], *, cwd: str | None = None,
           environ: Mapping[str, str] | None = None,
           adjust: Callable[[Settings], Settings] | None = None) -> tuple[Reviewed, Session]:
    """The review pipeline from the agent on, on the session's comments; `adjust` as review's."""
    from ocr_hook.commands import review as review_cmd
    from ocr_hook.delegate import ops

    cwd = os.getcwd() if cwd is None else cwd
    environ = os.environ if environ is None else environ
    session, change_set = ops.load_fresh(cwd, session_id, environ)
    from ocr_hook.delegate.checks import require_verdicts

    require_verdicts(session)  # an applicable check without the host's verdict: exit 3, nothing reported

    def fixed(loaded: Settings) -> Settings:
        # start's selection and gate (finish may only make the gate stricter); never the result cache: a
        # host's findings must not pass for the configured model's in a later review.
        return (adjust or _same)(ops.finish_settings(session, loaded, flags)._replace(cache=False))

    done = review_cmd.review(session.scope, session.paths, session.config_file, {**session.flags, **flags},
                             cwd=session.repo_root, environ=environ, agent=ops.agent_for(session), adjust=fixed,
                             change_set=change_set)
    ops.check_judged(session, done.result)
    return done, session


def _same(settings: Settings) -> Settings:
    return settings


def run_finish(session_id: str, flags: Mapping[str, Any], quiet: bool) -> int:
    from ocr_hook.commands import review as review_cmd
    from ocr_hook.commands.progress import Progress

    # As review's run: a finish that stops early (a stale session) leaves no old report behind.
    review_cmd.clear_outputs(flags.get(k) for k in ("json_output", "sarif_output", "gitlab_output"))
    done, session = finish(session_id, flags)
    progress = Progress(sys.stderr, quiet=quiet, live=False)
    # The patch comes from this session again, never from `review`, which would ask the configured model.
    return review_cmd.report(done.result, done.change_set, done.texts, done.settings, progress, os.environ,
                             scope_kind=session.scope.kind, patch_command=f"delegate finish {session.id}")
