"""Overrides of one check for one change (DESIGN.md 20), recorded by `ocr-hook dismiss --check` in the dismissals
file under `checks:`, one entry each: {check, change, reason, by, on}. Never all checks at once: an entry names
one check, and applies only to the change it names (a pull request, or one staged change by its tree).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ocr_hook.checks.model import Override
from ocr_hook.errors import ConfigError

if TYPE_CHECKING:
    from ocr_hook.changes.model import ChangeSet

KEYS = ("check", "change", "reason", "by", "on")


class CheckOverride(NamedTuple):
    check: str
    change: str  # which change: "pull request 12", "staged tree <id>", "range <base>..<target>"
    reason: str
    by: str
    on: dt.date

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "change": self.change, "reason": self.reason, "by": self.by, "on": self.on}


def change_id(change_set: ChangeSet, environ: Mapping[str, str], dismissals_file: str) -> str:
    """Names the change an override is for: the pull request in CI, else the staged change (what the commit will
    change, the dismissals file left out: staging the override must not make it miss), else the reviewed range."""
    from ocr_hook.changes import git
    from ocr_hook.cienv import request_number, running
    from ocr_hook.digest import sha256_hex

    number = request_number(environ)
    system = running(environ)
    if number:
        return f"pull request {number}" + (f" ({system})" if system else "")
    outside = ["--", ".", f":(exclude,literal){dismissals_file}"]
    if change_set.target is None:
        base = ["HEAD"] if git.has_head(change_set.repo_root) else [git.empty_tree(change_set.repo_root)]
        raw = git.git_text(change_set.repo_root, ["diff", "--cached", "--raw", "-z", "--no-renames", *base, *outside])
        return "staged change " + sha256_hex(raw.encode("utf-8", "surrogateescape"))[:16]
    # A range by what it changes, not by its last commit: committing the override (as `dismiss --check` says to)
    # makes a new last commit, and the override must still name the change it was written for.
    raw = git.git_text(change_set.repo_root, ["diff", "--raw", "-z", "--no-renames", change_set.base,
                                              change_set.target, *outside])
    return f"range from {change_set.base[:12]}, changes {sha256_hex(raw.encode('utf-8', 'surrogateescape'))[:16]}"


def parse(data: Any, where: str) -> tuple[CheckOverride, ...]:
    items = data.get("checks") if isinstance(data, Mapping) else None
    if items is None:
        return ()
    if not isinstance(items, list):
        raise ConfigError(f"dismissals file {where}: 'checks' must be a list")
    out = []
    for n, item in enumerate(items, 1):
        at = f"dismissals file {where}: checks entry {n}"
        if not isinstance(item, Mapping):
            raise ConfigError(f"{at}: must be a mapping")
        item = {("on" if k is True else k): v for k, v in item.items()}
        unknown = [str(k) for k in item if k not in KEYS]
        missing = [k for k in KEYS if k not in item]
        if unknown or missing:
            raise ConfigError(f"{at}: " + (f"unknown key '{unknown[0]}'" if unknown else f"missing key '{missing[0]}'")
                              + f" (keys: {', '.join(KEYS)})")
        if not all(isinstance(item[k], str) and item[k].strip() for k in KEYS[:4]):
            raise ConfigError(f"{at}: check, change, reason and by must be non-empty text")
        on = item["on"]
        if isinstance(on, str):
            try:
                on = dt.date.fromisoformat(on)
            except ValueError:
                raise ConfigError(f"{at}: 'on' must be a date (YYYY-MM-DD)") from None
        if not isinstance(on, dt.date):
            raise ConfigError(f"{at}: 'on' must be a date (YYYY-MM-DD)")
        out.append(CheckOverride(item["check"], item["change"], item["reason"], item["by"], on))
    return tuple(out)


def read(repo_root: str, name: str) -> tuple[CheckOverride, ...]:
    """The work tree's overrides (the file is reviewed with the change, like every dismissal)."""
    from ocr_hook.findings.dismissals import _Loader, read_file_text

    text = read_file_text(repo_root, name)
    if text is None:
        return ()
    import yaml

    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError:
        return ()  # the findings' reading of the same file reports it, with its line
    return parse(data, name)


def overrides_for(repo_root: str, name: str, change_set: ChangeSet, environ: Mapping[str, str]) -> dict[str, Override]:
    """Check name → the override recorded for this change (the last entry for a check wins)."""
    entries = read(repo_root, name)
    if not entries:
        return {}
    here = {change_id(change_set, environ, name)}
    if change_set.target is not None:  # in CI too: the range as `dismiss --check --base` names it in a checkout
        here.add(change_id(change_set, {}, name))
    return {e.check: Override(by=e.by, reason=e.reason, where=name) for e in entries if e.change in here}
