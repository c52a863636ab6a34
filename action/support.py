"""Small JSON and argument chores for action/run.sh, kept out of the shell script.

Standard library only: it runs before ocr-hook is installed (the fork check decides whether to
install at all); only `upload-sarif` runs later, with the installed ocr-hook's Python. Usage:
  support.py skip-reason            why a run without a key is a skip, not a failure ('' if it is not)
  support.py split-args STRING      the `args` input split like a POSIX shell would, NUL-terminated
  support.py report-outputs FILE    `status=...` and `findings=N` from ocr-hook's JSON report
  support.py install-key DIR        the name of an install of the ocr-hook in DIR with this Python: its
                                    version and a digest of its sources and of the interpreter
  support.py upload-sarif           upload OCR_ACTION_SARIF_FILE to code scanning as the `upload-sarif`
                                    input says (auto, true); exit 1 when that is a failure
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import sys
from pathlib import Path
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


# What a wheel of the checkout is built from; anything else in it (tests, docs, .git) does not change the install.
INSTALLED_SOURCES = ("pyproject.toml", "ocr_hook", "config")


def install_key(action_dir: str) -> str:
    """Same key, same install: equal sources and the same interpreter. A different key is a new install, never
    a changed one, so a cached install can be reused without looking inside it."""
    import tomllib  # here: the other chores also run on an older Python, to say what is wrong

    root = Path(action_dir)
    version = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    digest = hashlib.sha256()
    for name in (sys.version, sys.platform, platform.machine(), os.path.realpath(sys.executable)):
        digest.update(name.encode() + b"\0")
    for top in INSTALLED_SOURCES:
        paths = [root / top] if (root / top).is_file() else sorted((root / top).rglob("*"))
        for path in paths:
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(path.relative_to(root).as_posix().encode() + b"\0")
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return f"{version}-py{sys.version_info[0]}.{sys.version_info[1]}-{digest.hexdigest()[:16]}"


UPLOAD_MODES = ("auto", "true")


def upload_sarif(environ: dict[str, str]) -> int:
    """The Action's SARIF upload, through the REST API rather than github/codeql-action/upload-sarif:
    that action's failure carries no reason a later step could read, and `auto` has to tell a
    repository without code scanning (a notice) from every other failure (an error)."""
    from ocr_hook.publish.code_scanning import not_enabled, upload_sarif
    from ocr_hook.publish.github_api import ApiRefusal, GitHubApi

    mode = environ.get("INPUT_UPLOAD_SARIF", "auto")
    if mode not in UPLOAD_MODES:
        print(f"::error title=ocr-hook::upload-sarif must be auto, true or false, not {mode[:40]!r}")
        return 1
    path, token = environ.get("OCR_ACTION_SARIF_FILE", ""), environ.get("OCR_ACTION_GITHUB_TOKEN", "")
    repository, category = environ.get("GITHUB_REPOSITORY", ""), environ.get("INPUT_SARIF_CATEGORY", "")
    commit, ref = environ.get("OCR_ACTION_COMMIT", ""), environ.get("OCR_ACTION_REF", "")
    if not token or not repository or not commit or not ref:
        missing = "the github-token input" if not token else "GITHUB_REPOSITORY, GITHUB_SHA or GITHUB_REF"
        return _upload_failed(mode, token, f"SARIF not uploaded: no {missing}", notice=False)
    try:
        with open(path, encoding="utf-8") as fh:
            log = json.load(fh)
        if not isinstance(log, dict):
            raise ValueError("not a SARIF log")
        with GitHubApi(environ.get("GITHUB_API_URL", ""), token) as api:
            upload_id = upload_sarif(api, repository, log, commit_sha=commit, ref=ref, category=category)
    except (OSError, ValueError) as exc:
        return _upload_failed(mode, token, f"SARIF not uploaded: cannot read {path}: {exc}", notice=False)
    except ApiRefusal as exc:
        if not_enabled(exc):
            return _upload_failed(mode, token, f"SARIF not uploaded: code scanning is not available in this repository "
                                        f"({exc.message}). The review's result stands; set upload-sarif: false to "
                                        "skip the upload.", notice=True)
        return _upload_failed(mode, token, f"SARIF upload failed: {exc}", notice=False)
    print(f"ocr-hook: uploaded {path} to code scanning (upload {upload_id}, category {category or '(none)'})")
    return 0


def _upload_failed(mode: str, token: str, message: str, *, notice: bool) -> int:
    # GitHub's message is printed as it came, and a server (or a proxy before it) may echo the request's
    # Authorization header: mask the token as github-review does, before anything else touches the text.
    if token:
        message = message.replace(token, "***")
    message = " ".join(message.split()).replace("%", "%25")
    if notice and mode == "auto":
        print(f"::notice title=ocr-hook SARIF upload::{message}")
        return 0
    print(f"::error title=ocr-hook SARIF upload::{message}")
    return 1


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
    elif argv[:1] == ["install-key"] and len(argv) == 2:
        try:
            print(install_key(argv[1]))
        except (ImportError, OSError, KeyError, ValueError) as exc:  # ImportError: tomllib is Python 3.11+
            print(f"support.py: no install key for {argv[1]}: {exc}", file=sys.stderr)
            return 2
    elif argv == ["upload-sarif"]:
        return upload_sarif(dict(os.environ))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
