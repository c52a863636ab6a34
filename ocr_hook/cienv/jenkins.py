"""Jenkins multibranch pipelines (change requests: pull and merge requests found by a branch source).

Variables:
  CHANGE_TARGET   the branch the change request targets → base origin/BRANCH
Set only for change-request builds (together with CHANGE_ID), not for branch builds.
"""

from __future__ import annotations

from collections.abc import Mapping

from ocr_hook.cienv.guess import Guess, branch_refs, value

VARIABLES = ("CHANGE_TARGET",)


def detect(environ: Mapping[str, str]) -> Guess | None:
    branch = value(environ, "CHANGE_TARGET")
    if not branch:
        return None
    return Guess("Jenkins (change request)", branch_refs(branch), f"CHANGE_TARGET={branch}")
