"""Checks (DESIGN.md 20): the team's own rules, each answered for the whole change.

`model` holds the small types every stage reads (a check as its file defines it, a verdict with its
evidence, an override), loading check files, and overrides. The change-level pass and the verdict cache are the
agent's (agent/checks_pass.py, agent/checks_stage.py);
reports and publishing read only `model`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocr_hook.changes.model import ChangeSet

CHECKS_DIR = ".ocr-hook/checks"


def may_have_checks(change_set: ChangeSet) -> bool:
    """Whether a check could judge `change_set` or the change touches a check file: a path with `.ocr-hook/checks/`
    in it at the trusted revision or among the change's files (a superset of load.is_check_file). The listing is
    the one guidance read already (changes.snapshot keeps it): a repository without checks answers with no git
    process and without loading the checks' code, as a cached commit-time run must (issue 62.9)."""
    marker = CHECKS_DIR + "/"
    if any(marker in p for f in change_set.files for p in (f.path, f.old_path) if p):
        return True
    from ocr_hook.changes import git

    if git.is_empty_tree(change_set.base):  # as load.trusted_checks: no trusted revision before the first commit
        return False
    from ocr_hook.changes.snapshot import commit_listing

    return any(marker in path for path in commit_listing(change_set.repo_root, change_set.base))
