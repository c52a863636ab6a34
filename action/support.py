"""Small JSON and argument chores for action/run.sh, kept out of the shell script.

Standard library only: it runs before ocr-hook is installed (the fork check decides whether to
install at all). Usage:
  support.py skip-reason            why a run without a key is a skip, not a failure ('' if it is not)
  support.py split-args STRING      the `args` input split like a POSIX shell would, NUL-terminated
  support.py report-outputs FILE    `status=...` and `findings=N` from ocr-hook's JSON report
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from typing import Any

BOTS_WITHOUT_SECRETS = ("dependabot[bot]",)


def skip_reason(environ: dict[str, str]) -> str:
    """A pull request from a fork (or by a bot GitHub gives no secrets) cannot see the key secret."""
    event = _event(environ.get("GITHUB_EVENT_PATH", ""))
    pull = event.get("pull_request")
    if isinstance(pull, dict):
        head_repo = (pull.get("head") or {}).get("repo") or {}
        base_repo = (pull.get("base") or {}).get("repo") or event.get("repository") or {}
        head_name, base_name = head_repo.get("full_name"), base_repo.get("full_name")
        if head_repo.get("fork") is True or not head_name or head_name != base_name:
            return f"the pull request comes from the fork {head_name or '(deleted)'}, which gets no secrets"
    actor = environ.get("GITHUB_ACTOR", "")
    if actor in BOTS_WITHOUT_SECRETS:
        return f"the run was triggered by {actor}, which gets no Actions secrets"
    return ""


def _event(path: str) -> dict[str, Any]:
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def report_outputs(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            report = json.load(fh)
    except (OSError, ValueError):
        return "status=error\nfindings=0\n"
    findings = [f for f in report.get("findings", []) if not f.get("suppressed")]
    return f"status={report.get('status', 'error')}\nfindings={len(findings)}\n"


def main(argv: list[str]) -> int:
    if argv[:1] == ["skip-reason"]:
        print(skip_reason(dict(os.environ)))
    elif argv[:1] == ["split-args"] and len(argv) == 2:
        try:
            words = shlex.split(argv[1])
        except ValueError as exc:
            print(f"the args input is not valid shell words: {exc}", file=sys.stderr)
            return 2
        sys.stdout.write("".join(w + "\0" for w in words))
    elif argv[:1] == ["report-outputs"] and len(argv) == 2:
        sys.stdout.write(report_outputs(argv[1]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
