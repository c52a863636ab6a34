"""The context tools against a real scratch repository's index: found, not found, limits, confinement."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from gitrepo import commit_all, git, head, make_repo, write

from ocr_hook.agent import tools
from ocr_hook.agent.tool_api import ToolContext, ToolResult
from ocr_hook.agent.tools import FILE_NOT_FOUND, run_context_tool
from ocr_hook.changes import collect_changes, is_sensitive, open_snapshot
from ocr_hook.changes.scope import Scope
from ocr_hook.settings import load as load_settings

SECRET = "TOP-SECRET-CONTENT-4242"
GIT_CONFIG_MARKER = "gitconfigmarker9876"
SENSITIVE = "sensitivevalue777"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("tools")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    root = make_repo(base / "repo")
    git(root, "config", "ocrtest.marker", GIT_CONFIG_MARKER)

    # The committed side.
    write(root, "src/app/main.py", "".join(f"line {n} of main\n" for n in range(1, 11)))
    write(root, "old_module.py", "def gone():\n    return 'removed'\n")
    write(root, ".gitignore", "ignored.log\n")
    write(root, "vendor/lib.py", "needle = 1\n")
    write(root, "config/.env", "OLD=1\n")
    write(root, "src/app/helpers.py", "".join(f"def moved_{n}():\n    return {n}\n" for n in range(10)))
    os.symlink(outside / "secret.txt", root / "link_abs")
    commit_all(root, "base")

    # The staged change under review.
    write(root, "src/app/main.py", "".join(f"line {n} of main (staged)\n" for n in range(1, 13)))
    write(root, "src/app/util.py", "import os\n\ndef helper(flag):\n    # TODO tidy\n    return '--force-push'\n")
    write(root, "tests/test_main.py", "from src.app.main import run\n\ndef test_run():\n    assert run()\n")
    write(root, "docs/Guide.md", "# Guide\nFIXME: explain -v and --cached\n")
    write(root, "big.txt", "".join(f"big line {n}\n" for n in range(1, 1201)))
    write(root, "crlf.txt", "first\r\nsecond\r\n")
    write(root, "odd.txt", "form\x0cfeed stays on line 1\nline two\n")
    write(root, "data.bin", b"\x00\x01\x02binary")
    write(root, "latin1.txt", "caf\xe9 cr\xe8me\n".encode("latin-1"))
    write(root, "config/.env", f"API_TOKEN={SENSITIVE}\n")
    write(root, "hits.txt", "".join("hit here\n" for _ in range(150)))
    write(root, "huge_diff.txt", "".join(f"{n:06d} a long enough line to make this diff large\n"
                                         for n in range(3000)))
    for n in range(120):
        write(root, f"gen/item_{n:03d}.py", "".join(f"common_token {k}\n" for k in range(5)))
    os.symlink("../outside/secret.txt", root / "link_rel")
    git(root, "add", "-A")
    git(root, "rm", "-q", "--cached", "old_module.py")
    git(root, "mv", "src/app/helpers.py", "src/app/tools_renamed.py")

    os.symlink("Guide.md", root / "docs/current")
    git(root, "add", "docs/current")
    # Never part of the snapshot: an ignored file and an unstaged edit in the work tree.
    write(root, "ignored.log", f"{SECRET} ignored\n")
    write(root, "src/app/main.py", f"UNSTAGED {SECRET}\n")

    return root


@pytest.fixture(scope="module")
def ctx(repo: Path) -> Iterator[ToolContext]:
    """The staged change under review."""
    yield from context_for(repo, Scope("staged"))


def context_for(root: Path, scope: Scope) -> Iterator[ToolContext]:
    change_set = collect_changes(str(root), scope, (), os.environ)
    snapshot = open_snapshot(str(root), change_set)
    try:
        yield ToolContext(snapshot=snapshot, change_set=change_set, current_path="src/app/main.py")
    finally:
        snapshot.close()


def call(ctx: ToolContext, name: str, **tool_input: Any) -> ToolResult:
    return run_context_tool(name, tool_input, ctx)


# --- file_read -----------------------------------------------------------------------------------


def test_file_read_numbers_lines_of_the_staged_version(ctx: ToolContext):
    result = call(ctx, "file_read", file_path="src/app/main.py")
    assert not result.is_error
    lines = result.text.split("\n")
    assert lines[0] == "1|line 1 of main (staged)"
    assert lines[-1] == "12|line 12 of main (staged)"
    assert len(lines) == 12
    assert "UNSTAGED" not in result.text


def test_file_read_a_range_and_a_range_running_past_the_end(ctx: ToolContext):
    assert call(ctx, "file_read", file_path="src/app/main.py", start_line=3, end_line=4).text == (
        "3|line 3 of main (staged)\n4|line 4 of main (staged)")
    tail = call(ctx, "file_read", file_path="./src//app/main.py", start_line=11, end_line=900)
    assert tail.text == "11|line 11 of main (staged)\n12|line 12 of main (staged)"


def test_file_read_returns_at_most_500_lines_and_says_how_to_go_on(ctx: ToolContext):
    result = call(ctx, "file_read", file_path="big.txt", start_line=1, end_line=1200)
    numbered = [ln for ln in result.text.split("\n") if ln[:1].isdigit()]
    assert len(numbered) == 500
    assert numbered[-1] == "500|big line 500"
    assert "at most 500 lines" in result.text and "start_line 501" in result.text
    default = call(ctx, "file_read", file_path="big.txt", start_line=700)
    assert default.text.split("\n")[0] == "700|big line 700"
    assert "1199|big line 1199" in default.text and "1200|" not in default.text


def test_file_read_past_the_end_is_an_error_for_the_model(ctx: ToolContext):
    result = call(ctx, "file_read", file_path="src/app/main.py", start_line=13)
    assert result.is_error
    assert result.text == ("start_line 13 is past the end of `src/app/main.py`, which has 12 lines. "
                           "Call file_read again with start_line between 1 and 12.")


def test_file_read_missing_file(ctx: ToolContext):
    result = call(ctx, "file_read", file_path="src/app/nothing.py")
    assert result.is_error
    assert result.text.startswith("The file `src/app/nothing.py` was not found in the reviewed snapshot.")
    assert '{"query_name": "nothing.py"}' in result.text


def test_file_read_ignored_and_deleted_files_are_not_in_the_snapshot(ctx: ToolContext):
    ignored = call(ctx, "file_read", file_path="ignored.log")
    assert ignored.is_error and SECRET not in ignored.text and "not found" in ignored.text
    deleted = call(ctx, "file_read", file_path="old_module.py")
    assert deleted.is_error and "deleted by this change" in deleted.text
    assert "'removed'" not in deleted.text


def test_file_read_directory_binary_and_odd_text(ctx: ToolContext):
    directory = call(ctx, "file_read", file_path="src/app")
    assert directory.is_error and "is a directory" in directory.text and "src/app/util.py" in directory.text
    binary = call(ctx, "file_read", file_path="data.bin")
    assert binary.is_error and "binary file" in binary.text
    assert call(ctx, "file_read", file_path="crlf.txt").text == "1|first\n2|second"
    odd = call(ctx, "file_read", file_path="odd.txt").text  # only newlines end lines
    assert odd == "1|form\x0cfeed stays on line 1\n2|line two"
    latin = call(ctx, "file_read", file_path="latin1.txt").text
    assert latin == "1|caf\ufffd cr\ufffdme"
    latin.encode("utf-8")  # no lone surrogates can reach the API


def test_file_read_bad_line_numbers_are_refused_even_without_the_registry(ctx: ToolContext):
    result = call(ctx, "file_read", file_path="big.txt", start_line=0)
    assert result.is_error and "start_line must be 1 or more" in result.text
    result = call(ctx, "file_read", file_path="big.txt", start_line=9, end_line=3)
    assert result.is_error and "end_line (3) is before start_line (9)" in result.text


# --- confinement -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "problem"), [
    ("../outside/secret.txt", "leaves its directory"),
    ("../../etc/passwd", "leaves its directory"),
    ("src/../../outside/secret.txt", "leaves its directory"),
    ("src/../src/app/main.py", "leaves its directory"),
    ("/etc/passwd", "is absolute"),
    ("~/.ssh/id_rsa", "is absolute"),
    ("C:\\Windows\\win.ini", "is absolute"),
    (".git/config", "git's own"),
    ("./.git/config", "git's own"),
    (".GIT/config", "git's own"),
    ("src/.git/config", "git's own"),
    ("a\0b", "NUL"),
    ("link_abs", "symbolic link"),
    ("link_rel", "symbolic link"),
])
def test_file_read_never_leaves_the_snapshot(ctx: ToolContext, path: str, problem: str):
    result = call(ctx, "file_read", file_path=path)
    assert result.is_error
    assert problem in result.text  # refused by us, not merely missing from the snapshot
    assert SECRET not in result.text
    assert GIT_CONFIG_MARKER not in result.text
    assert "root:" not in result.text  # /etc/passwd content


def test_absolute_paths_get_the_relative_form_suggested(ctx: ToolContext):
    absolute = f"{ctx.change_set.repo_root}/src/app/main.py"
    result = call(ctx, "file_read", file_path=absolute)
    assert result.is_error
    assert 'use the repository-relative path "src/app/main.py"' in result.text
    outside = str(Path(ctx.change_set.repo_root).parent / "outside" / "secret.txt")
    refused = call(ctx, "file_read", file_path=outside)
    assert refused.is_error and "is absolute" in refused.text and SECRET not in refused.text


@pytest.mark.parametrize("path", ["link_abs", "link_rel"])
def test_symlinks_are_reported_never_followed(ctx: ToolContext, path: str):
    result = call(ctx, "file_read", file_path=path)
    assert result.is_error
    assert f"`{path}` is a symbolic link to `" in result.text
    assert "points outside the repository" in result.text
    assert SECRET not in result.text


def test_a_link_inside_the_repository_names_the_path_to_read(ctx: ToolContext):
    result = call(ctx, "file_read", file_path="docs/current")
    assert result.is_error
    assert result.text == ("`docs/current` is a symbolic link to `Guide.md`. Links are never followed; to read "
                           'the file it points to, call file_read with {"file_path": "docs/Guide.md"}.')


def test_symlink_diff_shows_the_link_target_not_the_content(ctx: ToolContext):
    result = call(ctx, "file_read_diff", path_array=["link_rel"])
    assert "../outside/secret.txt" in result.text  # the blob of a link is its target path
    assert SECRET not in result.text


def test_search_never_reaches_outside_or_ignored_content(ctx: ToolContext):
    result = call(ctx, "code_search", search_text="TOP-SECRET")
    assert SECRET not in result.text
    assert result.text.startswith("No matches for")
    assert GIT_CONFIG_MARKER not in call(ctx, "code_search", search_text="configmarker").text
    assert SECRET not in call(ctx, "code_search", search_text="secret", file_patterns=["link_abs"]).text


@pytest.mark.parametrize(("spec", "problem"), [
    ("../outside", "leaves its directory"),
    ("src/../../outside", "leaves its directory"),
    ("/etc", "is absolute"),
    (":(exclude)../x", "leaves its directory"),
    (":(exclude)/etc", "is absolute"),
    (".git/", "git's own"),
    (":(attr:secret)*.py", "unsupported pathspec magic"),
    (":(exclude", "unclosed"),
    (" ", "must not be empty"),
])
def test_code_search_refuses_pathspecs_that_leave_the_repository(ctx: ToolContext, spec: str, problem: str):
    result = call(ctx, "code_search", search_text="needle", file_patterns=[spec])
    assert result.is_error
    assert problem in result.text
    assert "like" in result.text  # says how to write it instead


# --- file_read_diff --------------------------------------------------------------------------------


def test_file_read_diff_returns_the_patches_asked_for(ctx: ToolContext):
    result = call(ctx, "file_read_diff", path_array=["src/app/util.py", "tests/test_main.py"])
    assert not result.is_error
    assert "diff --git a/src/app/util.py b/src/app/util.py" in result.text
    assert "+def helper(flag):" in result.text
    assert "diff --git a/tests/test_main.py b/tests/test_main.py" in result.text
    assert result.text.index("src/app/util.py") < result.text.index("tests/test_main.py")


def test_file_read_diff_silently_leaves_out_paths_not_in_the_change(ctx: ToolContext):
    result = call(ctx, "file_read_diff",
                  path_array=["vendor/lib.py", "src/app/util.py", "../outside/secret.txt", "src/app/util.py"])
    assert not result.is_error
    assert result.text.count("diff --git") == 1
    assert "vendor/lib.py" not in result.text and "outside" not in result.text


def test_file_read_diff_of_a_deleted_file_shows_its_removed_lines(ctx: ToolContext):
    result = call(ctx, "file_read_diff", path_array=["old_module.py"])
    assert "-def gone():" in result.text


def test_file_read_diff_when_no_path_is_in_the_change(ctx: ToolContext):
    result = call(ctx, "file_read_diff", path_array=["vendor/lib.py", "nope.py"])
    assert result.text.startswith("None of the requested paths is part of this change: vendor/lib.py, nope.py.")
    assert "The files changed in this change are: big.txt, config/.env, crlf.txt," in result.text  # what did change
    assert f"(and {len(ctx.change_set.files) - 40} more)" in result.text


def test_file_read_diff_caps_its_output(ctx: ToolContext):
    alone = call(ctx, "file_read_diff", path_array=["huge_diff.txt"])
    assert len(alone.text) < tools.MAX_DIFF_CHARS + 200
    assert "Diff of `huge_diff.txt` cut after" in alone.text
    together = call(ctx, "file_read_diff", path_array=["src/app/util.py", "huge_diff.txt"])
    assert "+def helper(flag):" in together.text
    assert "Not shown, to keep this answer under" in together.text and "huge_diff.txt" in together.text


# --- file_find -------------------------------------------------------------------------------------


def test_file_find_matches_basenames_case_insensitively_exact_name_first(ctx: ToolContext):
    result = call(ctx, "file_find", query_name="MAIN.py")
    assert result.text.split("\n") == ["src/app/main.py", "tests/test_main.py"]
    assert call(ctx, "file_find", query_name="guide").text == "docs/Guide.md"


def test_file_find_case_sensitive(ctx: ToolContext):
    assert call(ctx, "file_find", query_name="guide", case_sensitive=True).text == FILE_NOT_FOUND
    assert call(ctx, "file_find", query_name="Guide", case_sensitive=True).text == "docs/Guide.md"


def test_file_find_matches_basenames_not_directories(ctx: ToolContext):
    assert call(ctx, "file_find", query_name="app").text == FILE_NOT_FOUND
    assert call(ctx, "file_find", query_name="app/util").text == "src/app/util.py"  # a slash: whole path


def test_file_find_not_found_is_the_exact_text(ctx: ToolContext):
    result = call(ctx, "file_find", query_name="UserService")
    assert result.text == "// The file was not found"
    assert not result.is_error
    assert call(ctx, "file_find", query_name="ignored.log").text == FILE_NOT_FOUND  # not in the index


def test_file_find_returns_at_most_100(ctx: ToolContext):
    result = call(ctx, "file_find", query_name="item_")
    paths = [ln for ln in result.text.split("\n") if ln.startswith("gen/")]
    assert len(paths) == 100
    assert "[100 of 120 matching files shown" in result.text


# --- code_search -------------------------------------------------------------------------------------


def test_code_search_hits_are_path_line_text(ctx: ToolContext):
    result = call(ctx, "code_search", search_text="def helper")
    assert result.text == "src/app/util.py:3:def helper(flag):"


def test_code_search_searches_the_staged_version_only(ctx: ToolContext):
    result = call(ctx, "code_search", search_text="of main", file_patterns=["src/"])
    assert result.text.split("\n")[0] == "src/app/main.py:1:line 1 of main (staged)"
    assert "UNSTAGED" not in result.text


def test_code_search_case_and_perl_options(ctx: ToolContext):
    assert "src/app/util.py:4:    # TODO tidy" in call(ctx, "code_search", search_text="todo").text
    assert call(ctx, "code_search", search_text="todo", case_sensitive=True).text.startswith("No matches")
    both = call(ctx, "code_search", search_text="TODO|FIXME", use_perl_regexp=True).text.split("\n")
    assert both == ["docs/Guide.md:2:FIXME: explain -v and --cached", "src/app/util.py:4:    # TODO tidy"]


@pytest.mark.parametrize(("text", "expected"), [
    ("--force", "src/app/util.py:5:    return '--force-push'"),
    ("--cached", "docs/Guide.md:2:FIXME: explain -v and --cached"),
    ("-v", "docs/Guide.md:2:FIXME: explain -v and --cached"),
])
def test_search_text_starting_with_a_dash_is_searched_for(ctx: ToolContext, text: str, expected: str):
    result = call(ctx, "code_search", search_text=text, case_sensitive=True)
    assert result.text == expected


def test_code_search_pathspecs_with_exclude(ctx: ToolContext):
    everywhere = call(ctx, "code_search", search_text="needle|helper", use_perl_regexp=True).text
    assert "vendor/lib.py:1:needle = 1" in everywhere
    narrowed = call(ctx, "code_search", search_text="needle|helper", use_perl_regexp=True,
                    file_patterns=["*.py", ":(exclude)vendor/"]).text
    assert narrowed == "src/app/util.py:3:def helper(flag):"
    short_form = call(ctx, "code_search", search_text="needle", file_patterns=[":!vendor/"]).text
    assert short_form.startswith("No matches for \"needle\" in :!vendor/")


def test_code_search_caps_hits_per_file(ctx: ToolContext):
    result = call(ctx, "code_search", search_text="hit here", file_patterns=["hits.txt"])
    rows = [ln for ln in result.text.split("\n") if ln.startswith("hits.txt:")]
    assert len(rows) == 100
    assert rows[-1] == "hits.txt:100:hit here"
    assert "Only the first 100 matches are shown for: hits.txt" in result.text


def test_code_search_caps_the_whole_answer(ctx: ToolContext):
    result = call(ctx, "code_search", search_text="common_token")  # 600 hits in 120 files
    rows = [ln for ln in result.text.split("\n") if ln.startswith("gen/")]
    assert len(rows) == tools.MAX_SEARCH_LINES
    assert "[Output cut after 400 of 600 matches" in result.text
    assert len(result.text) <= tools.MAX_SEARCH_CHARS + 500


def test_code_search_no_hits_and_bad_regexp(ctx: ToolContext):
    none = call(ctx, "code_search", search_text="no_such_identifier_xyz")
    assert not none.is_error
    assert none.text == ('No matches for "no_such_identifier_xyz" in the reviewed snapshot '
                         "(case-insensitive, basic regular expression).")
    bad = call(ctx, "code_search", search_text="(unclosed", use_perl_regexp=True)
    assert bad.is_error and bad.text.startswith("code_search could not run:")


def test_loop_tools_are_not_run_here(ctx: ToolContext):
    with pytest.raises(ValueError, match="agent loop"):
        run_context_tool("task_done", {"state": "DONE"}, ctx)


def test_commit_mode_reads_the_target_commit_not_the_index(repo: Path):
    for commit_ctx in context_for(repo, Scope("commit", commit=head(repo))):
        assert call(commit_ctx, "file_read", file_path="src/app/main.py", end_line=1).text == "1|line 1 of main"
        assert call(commit_ctx, "file_read", file_path="old_module.py").text.startswith("1|def gone():")
        assert call(commit_ctx, "file_find", query_name="util.py").text == FILE_NOT_FOUND  # only staged
        hits = call(commit_ctx, "code_search", search_text="of main").text.split("\n")
        assert hits[0] == "src/app/main.py:1:line 1 of main" and len(hits) == 10


def test_a_renamed_file_is_found_by_its_old_path(ctx: ToolContext):
    read = call(ctx, "file_read", file_path="src/app/helpers.py")
    assert read.is_error
    assert read.text == ('`src/app/helpers.py` was renamed to `src/app/tools_renamed.py` by this change: call '
                         'file_read with {"file_path": "src/app/tools_renamed.py"}.')
    diff = call(ctx, "file_read_diff", path_array=["src/app/helpers.py"]).text
    assert "rename from src/app/helpers.py" in diff and "rename to src/app/tools_renamed.py" in diff


@dataclasses.dataclass(frozen=True)
class ContextWithSensitiveFiles(ToolContext):
    """ToolContext plus the predicate the agent loop is asked to pass (not in tool_api yet)."""

    is_hidden: Callable[[str], bool] = lambda path: False


@pytest.fixture(scope="module")
def guarded(ctx: ToolContext) -> ToolContext:
    settings = load_settings(None, environ={})
    return ContextWithSensitiveFiles(ctx.snapshot, ctx.change_set, ctx.current_path,
                                     is_hidden=lambda path: is_sensitive(path, settings))


def test_sensitive_files_are_never_read(guarded: ToolContext):
    read = call(guarded, "file_read", file_path="config/.env")
    assert read.is_error
    assert read.text == "`config/.env` is a sensitive file (it may hold secrets); its content is never sent for review."
    diff = call(guarded, "file_read_diff", path_array=["config/.env"])
    assert diff.is_error and SENSITIVE not in diff.text and "config/.env" in diff.text
    both = call(guarded, "file_read_diff", path_array=["config/.env", "src/app/util.py"])
    assert "+def helper(flag):" in both.text and SENSITIVE not in both.text
    assert both.text.endswith("[Not shown: config/.env: sensitive files, never sent for review.]")


def test_sensitive_files_are_left_out_of_search_results(guarded: ToolContext):
    result = call(guarded, "code_search", search_text="API_TOKEN")
    assert SENSITIVE not in result.text
    assert result.text.startswith('No matches for "API_TOKEN"')
    assert result.text.endswith("[1 matches in sensitive files are not shown.]")
    assert call(guarded, "file_find", query_name=".env").text == "config/.env"  # a name is not a secret


# --- what the tools masked, for the run's note ----------------------------------------------------------


def test_tools_count_the_lines_they_masked(tmp_path: Path):
    root = make_repo(tmp_path / "repo")
    write(root, "keys.py", "import os\n")
    commit_all(root, "base")
    write(root, "keys.py", 'import os\npassword = "k3Yq9vLw2ZtR8mNp"\nx = 1\ny = 2\n'
                           'token = "AKIAQ3XB7RM2LPZK4TWE"\nz = 3\n')
    git(root, "add", "keys.py")
    for context in context_for(root, Scope("staged")):
        whole = call(context, "file_read", file_path="keys.py", start_line=1, end_line=6)
        assert "k3Yq9vLw2ZtR8mNp" not in whole.text and "AKIAQ3XB7RM2LPZK4TWE" not in whole.text
        assert whole.masked == 2
        assert call(context, "file_read", file_path="keys.py", start_line=3, end_line=4).masked == 0
        assert call(context, "file_read", file_path="keys.py", start_line=1, end_line=3).masked == 1
        found = call(context, "code_search", search_text="password")
        assert "k3Yq9vLw2ZtR8mNp" not in found.text and found.masked == 1
        assert call(context, "code_search", search_text="import").masked == 0
