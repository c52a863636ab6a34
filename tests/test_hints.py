"""The next steps a blocked run ends with (ocr_hook.reports.hints), for each place a review runs."""

from __future__ import annotations

from ocr_hook.findings import Category, Finding, Fix, Severity
from ocr_hook.reports.hints import next_steps


def finding(n: int, fix: bool = False) -> Finding:
    return Finding("a.py", n, n, Severity.HIGH, Category.BUG, "m", "x", True, f"{n:02d}" * 16,
                   fix=Fix(n, n, "x") if fix else None)


def steps(findings: list[Finding], **kw: object) -> str:
    args = {"scope_kind": "staged", "pre_commit": False, "patch_output": None, "json_output": None,
            "dismissals_file": ".ocr-hook/dismissed.yaml", **kw}
    return "\n".join(next_steps(findings, **args))  # type: ignore[arg-type]


def test_nothing_blocking_means_no_hint() -> None:
    assert next_steps([], scope_kind="staged", pre_commit=True, patch_output=None, json_output=None,
                      dismissals_file="d.yaml") == ()


def test_a_staged_commit_under_pre_commit() -> None:
    text = steps([finding(1, fix=True)], pre_commit=True)
    assert text.splitlines()[1].endswith(": ocr-hook apply")  # from review memory: no second review
    assert 'ocr-hook dismiss 01010101 --reason "..."' in text
    assert "SKIP=ocr-hook git commit ..." in text


def test_a_push_names_the_push_hook_and_a_written_patch_is_applied_to_the_work_tree() -> None:
    text = steps([finding(1, fix=True)], pre_commit=True, scope_kind="push", patch_output="my fixes.patch")
    assert "git apply 'my fixes.patch'" in text and "--index" not in text
    assert "SKIP=ocr-hook-push git push ..." in text


def test_ci_has_no_skip_and_no_fix_line_without_a_fix() -> None:
    text = steps([finding(1)], scope_kind="base", json_output="out/r.json")
    assert "SKIP=" not in text and "apply" not in text
    assert 'ocr-hook dismiss 01010101 --from out/r.json --reason "..."' in text


def test_without_memory_the_patch_is_written_and_applied_even_though_the_review_exits_1() -> None:
    text = steps([finding(1, fix=True)], memory=False)
    assert "ocr-hook review --patch-output ocr-hook-fixes.patch; git apply --index ocr-hook-fixes.patch" in text
    assert "ocr-hook apply" not in text and "&&" not in text


def test_in_ci_the_hint_speaks_of_the_branch_and_the_job_s_report() -> None:
    text = steps([finding(1, fix=True)], scope_kind="base", ci="GitLab CI", json_output="gl-report.json")
    assert "--patch-output" not in text and "ocr-hook apply" not in text and "SKIP=" not in text
    assert "fix the findings on your branch and push again" in text
    assert "this job's JSON report (gl-report.json) saved as REPORT.json" in text
    assert 'ocr-hook dismiss 01010101 --from REPORT.json --reason "..."' in text


def test_with_memory_off_dismiss_needs_a_report_and_many_ids_are_cut() -> None:
    text = steps([finding(n) for n in range(1, 9)], memory=False)
    assert text.count("ocr-hook dismiss ") == 5 and "--from REPORT.json" in text
    assert "(and 3 more: each finding shows its id)" in text


def test_without_memory_the_patch_step_keeps_the_scope_and_paths() -> None:
    """Issue 58 item 19: pasted, `ocr-hook review --patch-output` after `--commit` reviewed nothing."""
    from ocr_hook.changes.scope import Scope, scan_scope
    from ocr_hook.commands.review import rerun_args

    text = steps([finding(1, fix=True)], scope_kind="commit", memory=False,
                 rerun=rerun_args(Scope("commit", commit="1a2b3c"), []))
    assert "ocr-hook review --commit 1a2b3c --patch-output ocr-hook-fixes.patch; git apply ocr-hook-fixes.patch" in text
    assert rerun_args(Scope("range", from_ref="main", to_ref="my branch"), ["a b.py"]) == \
        "review --from main --to 'my branch' -- 'a b.py'"
    assert rerun_args(scan_scope("v1.0"), ["src"]) == "scan --rev v1.0 -- src"
    assert rerun_args(scan_scope(staged=True), []) == "scan --staged"
    assert rerun_args(scan_scope(), ["x.py"]) == "scan -- x.py"


def test_the_program_named_is_the_one_the_user_s_shell_runs(tmp_path) -> None:
    """Issue 58 item 20: under pre-commit, with no ocr-hook on PATH but pre-commit's own environment, the
    commands name that installation's script; anywhere else, and when the shell has its own, `ocr-hook`."""
    from ocr_hook.hookenv.program import program

    env = tmp_path / "py_env-python3"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "ocr-hook").write_text("#!/bin/sh\n")
    user = tmp_path / "user bin"
    user.mkdir()
    hook_path = f"{env / 'bin'}:/usr/bin"
    assert program({"PRE_COMMIT": "1", "PATH": hook_path}, prefix=str(env)) == f"{env}/bin/ocr-hook"
    assert program({"PATH": hook_path}, prefix=str(env)) == "ocr-hook"  # not under pre-commit
    (user / "ocr-hook").write_text("#!/bin/sh\n")
    (user / "ocr-hook").chmod(0o755)
    assert program({"PRE_COMMIT": "1", "PATH": f"{hook_path}:{user}"}, prefix=str(env)) == "ocr-hook"
    text = steps([finding(1, fix=True)], program="/p/bin/ocr-hook")
    assert text.splitlines()[1].endswith(": /p/bin/ocr-hook apply")
    assert '      /p/bin/ocr-hook dismiss 01010101 --reason "..."' in text


def test_a_commit_s_own_index_is_told_from_the_repository_s() -> None:
    """Issue 58 item 18: what git 2.x sets GIT_INDEX_FILE to for a hook (seen with a real hook): `commit -a`
    index.lock, `commit PATH` next-index-PID.lock, a plain commit the index itself."""
    from ocr_hook.hookenv import temporary_index

    git_env = {"GIT_EXEC_PATH": "/usr/lib/git-core"}
    assert temporary_index({**git_env, "GIT_INDEX_FILE": "/r/.git/index.lock"})
    assert temporary_index({**git_env, "GIT_INDEX_FILE": "/r/.git/next-index-15964.lock"})
    assert not temporary_index({**git_env, "GIT_INDEX_FILE": ".git/index"})
    assert not temporary_index({"GIT_INDEX_FILE": "/r/.git/index.lock"})  # set by hand, outside git
    assert not temporary_index(git_env)


def test_a_blocking_checks_override_command_names_the_same_program() -> None:
    """Under pre-commit with no ocr-hook of the user's own, the check's override command is pasted as printed too."""
    from ocr_hook.reports.hints import check_steps

    lines = check_steps(["endpoint-test"], base_ref="main", ci=None, dismissals_file=".ocr-hook/dismissed.yaml",
                        program="/p/bin/ocr-hook")
    assert '      /p/bin/ocr-hook dismiss --check endpoint-test --base main --reason "..."' in lines
