"""What to do about a blocked run: the lines a blocked text report (and the GitHub job summary) ends with.

Pure: the caller says where the run happened (scope, under pre-commit or not, which output files it wrote).

pre-commit tells a hook nothing about itself beyond PRE_COMMIT=1 (pre-commit 4.x, commands/run.py, sets
PRE_COMMIT and the PRE_COMMIT_FROM_REF/TO_REF... family; no hook id). The id `SKIP=` needs is therefore
taken from the scope: the manifest's hook `ocr-hook` is the one that runs `review --staged`, and
`ocr-hook-push` the one that runs `review --push` (a config may add an `alias`, which SKIP also matches).
"""

from __future__ import annotations

from collections.abc import Iterable

from ocr_hook.findings import Finding

HOOK_ID = {"staged": "ocr-hook", "push": "ocr-hook-push"}  # the ids in .pre-commit-hooks.yaml
SKIP_COMMAND = {"staged": "git commit ...", "push": "git push ..."}
MAX_IDS = 5  # dismiss lines shown before "and N more"
DEFAULT_PATCH = "ocr-hook-fixes.patch"


def next_steps(blocking: Iterable[Finding], *, scope_kind: str, pre_commit: bool, patch_output: str | None,
               json_output: str | None, dismissals_file: str, memory: bool = True,
               skip: str | None = None, patch_command: str | None = None, ci: str | None = None,
               rerun: str | None = None, program: str = "ocr-hook") -> tuple[str, ...]:
    """The hint for these blocking findings (none: no lines). `skip`: the command that skips the hook once
    under the manager that ran it (ocr_hook.hookenv.skip_hint); without it, pre-commit's. `patch_command`:
    the ocr-hook command that writes this run's patch when it is not review or scan (e.g. a delegate finish,
    which `review` would redo with a model). `memory`: this run was recorded in review memory, so `ocr-hook
    apply` and `ocr-hook dismiss` find it. `ci`: the CI system running the job (ocr_hook.cienv.running), whose
    hint is about the branch and the report, never the job's own checkout, which nobody works in. `rerun`: the
    arguments that run this very review again, its scope and paths kept (`review --commit 1a2b3c`, `scan a.py`),
    for the patch step when memory is off (any scope's review is the repository's last one in memory:
    `ocr-hook apply` takes its fixes). `program`: how the user's shell runs ocr-hook
    (ocr_hook.hookenv.program)."""
    blocking = list(blocking)
    if not blocking:
        return ()
    if ci is not None:
        return _in_ci(blocking, json_output, dismissals_file)
    lines = ["What to do next:"]
    apply_flag = "--index " if scope_kind == "staged" else ""
    if any(f.fix is not None for f in blocking):
        if patch_output:
            lines.append(f"  - apply the suggested fixes: git apply {apply_flag}{_quoted(patch_output)}")
        elif memory:
            lines.append(f"  - apply the suggested fixes (the work tree and the index; no new review): {program} apply")
        else:
            # `;` not `&&`: a run with a blocking finding exits 1, and the patch is written all the same.
            command = patch_command or rerun or ("scan" if scope_kind == "scan" else "review")
            lines.append(f"  - apply the suggested fixes: {program} {command} --patch-output {DEFAULT_PATCH}; "
                         f"git apply {apply_flag}{DEFAULT_PATCH}")
    # Without --from, dismiss looks the id up in the last review's memory; with memory off it needs a report.
    source = f" --from {_quoted(json_output)}" if json_output else ("" if memory else " --from REPORT.json")
    lines.append(f"  - a finding is wrong? Dismiss it with the reason (recorded in {dismissals_file}, for review "
                 "with your change):")
    lines += _dismiss_lines(blocking, source, program)
    if skip:
        lines.append(f"  - skip this hook once: {skip}")
    elif pre_commit and scope_kind in HOOK_ID:
        lines.append(f"  - skip this hook once: SKIP={HOOK_ID[scope_kind]} {SKIP_COMMAND[scope_kind]}")
    return tuple(lines)


def _dismiss_lines(blocking: list[Finding], source: str, program: str = "ocr-hook") -> list[str]:
    ids = list(dict.fromkeys(f.fingerprint[:8] for f in blocking))
    lines = [f"      {program} dismiss {short}{source} --reason \"...\"" for short in ids[:MAX_IDS]]
    if len(ids) > MAX_IDS:
        lines.append(f"      (and {len(ids) - MAX_IDS} more: each finding shows its id)")
    return lines


def _in_ci(blocking: list[Finding], json_output: str | None, dismissals_file: str) -> tuple[str, ...]:
    """A CI job's hint: what to change on the branch, and how a wrong finding is dismissed from a checkout
    (the job's review memory stays in the job, so dismiss reads this job's JSON report)."""
    fixes = any(f.fix is not None for f in blocking)
    report = f"this job's JSON report ({_quoted(json_output)})" if json_output else "this job's --json-output"
    shown = " (each suggested fix is shown above)" if fixes else ""
    lines = ["What to do next:",
             f"  - fix the findings on your branch and push again{shown}",
             f"  - a finding is wrong? In your checkout, with {report} saved as REPORT.json, dismiss it with the "
             f"reason and commit {dismissals_file}:"]
    return tuple(lines + _dismiss_lines(blocking, " --from REPORT.json"))


def _quoted(path: str) -> str:
    import shlex

    return shlex.quote(path)


def check_steps(names: Iterable[str], *, base_ref: str | None, ci: str | None, dismissals_file: str,
                program: str = "ocr-hook") -> tuple[str, ...]:
    """The hint for blocking checks (DESIGN.md 20): override one check for this change with a reason (never all at
    once), recorded in the dismissals file and committed with the change; the command names the change as the
    review did (its range from `base_ref`, else the staged change). In CI it is run in a checkout of the branch,
    or a maintainer resolves the check's thread on the pull request."""
    names = list(names)
    if not names:
        return ()
    scope = f" --base {_quoted(base_ref)}" if base_ref else ""
    where = "In your checkout of the branch, o" if ci else "O"
    lines = [f"  - a check does not hold for this change? {where}verride that one check with the "
             f"reason, then commit {dismissals_file}{' and push' if ci else ''}:"]
    lines += [f"      {program} dismiss --check {_quoted(n)}{scope} --reason \"...\"" for n in names[:5]]
    if ci:
        lines.append("    (or a maintainer resolves the check's thread on the pull request)")
    return tuple(lines)
