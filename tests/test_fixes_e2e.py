"""Suggested fixes end to end (issue 13): the real CLI, the real SDK against the scripted fake API, a
real scratch repository with space- and tab-indented code, a CRLF file without a final line break and
a path with a space. The model quotes code dedented, with `+` markers and with `N|` prefixes; the
suggestions come back re-indented in JSON, SARIF and the text report; the patch passes the real
`git apply --check` (and `--cached --check`, the snapshot being the index) and, applied to a copy,
gives exactly the expected files; SARIF with fixes passes the schema and the multitool; and reading
the SARIF the way reviewdog does (its parser/sarif.go) shows each fix covering exactly the result's
own lines, which is what a GitHub or GitLab suggested change needs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlparse

from agent_support import main_opening
from e2e_support import Run, run_review
from fake_api import Reply, tool_use
from gitrepo import commit_all, git, make_repo, repo_state, run_cli, write
from validators import validate_sarif

STORE = "app/store.py"
STORE_BEFORE = """\
class Store:
    def load(self, path):
        raise NotImplementedError

    def save(self, path, data):
        return None
"""
STORE_AFTER = """\
class Store:
    def load(self, path):
        if path:
            fh = open(path)
            data = fh.read()
            return data
        return None

    def save(self, path, data):
        out = open(path, "w")
        out.write(data)
        return None
"""
STORE_FIXED = """\
class Store:
    def load(self, path):
        if path:
            with open(path) as fh:
                data = fh.read()
            return data
        return None

    def save(self, path, data):
        with open(path, "w") as out:
            out.write(data)
        return None
"""

GO = "cmd/main.go"
GO_BEFORE = "package main\n\nfunc main() {\n\tfor i := 0; i < 3; i++ {\n\t\tprintln(i)\n\t}\n}\n"
GO_AFTER = ("package main\n\nfunc main() {\n\tfor i := 0; i < 3; i++ {\n\t\tif i > 1 {\n\t\t\tprintln(i)\n"
            "\t\t}\n\t}\n}\n")
GO_FIXED = ("package main\n\nfunc main() {\n\tfor i := 0; i < 3; i++ {\n\t\tif i >= 1 {\n\t\t\tfmt.Println(i)\n"
            "\t\t}\n\t}\n}\n")

CRLF = "win/legacy.py"
CRLF_BEFORE = "def double(x):\r\n    return x * 2\r\n"
CRLF_AFTER = "def double(x):\r\n    y = x * 2\r\n    return y"  # no final line break
CRLF_FIXED = "def double(x):\r\n    y = x * 2\r\n    return int(y)"

SPACED = "lib/with space.py"
SPACED_BEFORE = "def add(a, b):\n    return a + b\n"
SPACED_AFTER = "def add(a, b):\n    # add them\n    return a - b\n"
SPACED_FIXED = "def add(a, b):\n    # add them\n    return a + b\n"

BEFORE = {STORE: STORE_BEFORE, GO: GO_BEFORE, CRLF: CRLF_BEFORE, SPACED: SPACED_BEFORE}
AFTER = {STORE: STORE_AFTER, GO: GO_AFTER, CRLF: CRLF_AFTER, SPACED: SPACED_AFTER}
FIXED = {STORE: STORE_FIXED, GO: GO_FIXED, CRLF: CRLF_FIXED, SPACED: SPACED_FIXED}


def _c(message: str, code: str, suggestion: str | None, severity: str = "medium") -> dict[str, Any]:
    entry = {"content": message, "existing_code": code, "severity": severity, "category": "bug"}
    if suggestion is not None:
        entry["suggestion_code"] = suggestion
    return entry


COMMENTS: dict[str, list[dict[str, Any]]] = {
    STORE: [
        # dedented quote and suggestion (the file has them at 12 columns)
        _c("Leaks the file handle.", "fh = open(path)\ndata = fh.read()",
           "with open(path) as fh:\n    data = fh.read()", "high"),
        # overlaps the high one on line 5: keeps its text, loses its fix
        _c("Reads everything at once.", "data = fh.read()", "data = fh.read(1 << 20)", "low"),
        # copied from the diff with `+` markers, suggestion likewise
        _c("Leaks the output handle.", '+        out = open(path, "w")\n+        out.write(data)',
           '+        with open(path, "w") as out:\n+            out.write(data)'),
        # deleted code: shown where it was, never a fix
        _c("Removing the guard changes behaviour.", "raise NotImplementedError", "raise NotImplementedError()"),
        # not in the file at all: unanchored, never a fix
        _c("Invented code.", "shutil.rmtree(path)", "pass"),
    ],
    GO: [_c("Off by one; and use fmt.", "if i > 1 {\n\tprintln(i)\n}", "if i >= 1 {\n\tfmt.Println(i)\n}")],
    CRLF: [_c("Should be an int.", "return y", "return int(y)")],
    SPACED: [_c("Subtracts.", "3|    return a - b", "3|    return a + b", "high")],
}
EXPECTED_FIXES = {
    "Leaks the file handle.": {"start_line": 4, "end_line": 5,
                               "replacement": "            with open(path) as fh:\n                data = fh.read()"},
    "Reads everything at once.": None,
    "Leaks the output handle.": {"start_line": 10, "end_line": 11,
                                 "replacement": '        with open(path, "w") as out:\n            out.write(data)'},
    "Removing the guard changes behaviour.": None,
    "Invented code.": None,
    "Off by one; and use fmt.": {"start_line": 5, "end_line": 7,
                                 "replacement": "\t\tif i >= 1 {\n\t\t\tfmt.Println(i)\n\t\t}"},
    "Should be an int.": {"start_line": 3, "end_line": 3, "replacement": "    return int(y)"},
    "Subtracts.": {"start_line": 3, "end_line": 3, "replacement": "    return a + b"},
}


def _repo(root: Path) -> Path:
    repo = make_repo(root)
    for path, content in BEFORE.items():
        write(repo, path, content)
    commit_all(repo, "base")
    for path, content in AFTER.items():
        write(repo, path, content)
    git(repo, "add", "-A")
    return repo


def _script(fake_api: Any) -> None:
    for path, entries in COMMENTS.items():
        fake_api.script(main_opening(path), [Reply([tool_use("code_comment", {"comments": entries})])])


def _review(repo: Path, env: dict[str, str], out: Path, *scope: str) -> tuple[Run, Path]:
    patch = out / "fixes.patch"
    run = run_review(repo, env, out, *scope, "--no-review-filter", "--filter-mode", "nofilter",
                     "--patch-output", str(patch))
    return run, patch


def _git_apply(repo: Path, patch: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "apply", *args, str(patch)], cwd=repo, capture_output=True, text=True)


# --- reviewdog's reading of SARIF (its parser/sarif.go), in our own words -------------------------------


def reviewdog_range(region: dict[str, Any]) -> tuple[tuple[int, int], tuple[int, int] | None]:
    """(start line, start column), end (line, column) or None, as reviewdog turns a SARIF region into
    its own range: a missing startColumn is 1 and is then dropped (0) unless the region is empty; a
    missing endLine is startLine; a missing endColumn is 0 (end of line); a whole single line has no end."""
    start_line = region["startLine"]
    start_col = region.get("startColumn", 1)
    end_line = region.get("endLine", start_line)
    end_col = region.get("endColumn", 0)
    if start_line == end_line and start_col == end_col:
        return (start_line, start_col), (end_line, end_col)
    if start_col == 1:
        start_col = 0
    if start_line != end_line or start_col or end_col:
        return (start_line, start_col), (end_line, end_col)
    return (start_line, start_col), None


def reviewdog_path(location: dict[str, Any], base_ids: dict[str, Any], cwd: Path) -> str:
    """The path reviewdog gives an artifactLocation: the URI joined to its base, made relative to cwd."""
    uri = location["uri"]
    base = base_ids.get(location.get("uriBaseId", ""), {}).get("uri")
    if base:
        uri = urljoin(base, uri)
    path = unquote(urlparse(uri).path)
    return str(Path(path).relative_to(cwd)) if Path(path).is_absolute() else path


def reviewdog_suggestions(sarif: dict[str, Any], cwd: Path) -> list[dict[str, Any]]:
    """Per result with fixes: its path and range, and each suggestion's path, range and text."""
    out = []
    for run in sarif["runs"]:
        base_ids = run.get("originalUriBaseIds", {})
        for result in run["results"]:
            if not result.get("fixes"):
                continue
            physical = result["locations"][0]["physicalLocation"]
            suggestions = []
            for fix in result["fixes"]:
                for change in fix["artifactChanges"]:
                    for replacement in change["replacements"]:
                        suggestions.append({
                            "path": reviewdog_path(change["artifactLocation"], base_ids, cwd),
                            "range": reviewdog_range(replacement["deletedRegion"]),
                            "text": replacement["insertedContent"]["text"],
                        })
            out.append({"path": reviewdog_path(physical["artifactLocation"], base_ids, cwd),
                        "range": reviewdog_range(physical["region"]), "message": result["message"]["text"],
                        "suggestions": suggestions})
    return out


def _line_based(rng: tuple[tuple[int, int], tuple[int, int] | None]) -> tuple[int, int] | None:
    """The lines a reviewdog GitHub/GitLab suggestion replaces; None when it is not line-based."""
    (start, start_col), end = rng
    if start_col or (end is not None and end[1]):
        return None
    return start, end[0] if end is not None else start


def _gitlab_lines(rng: tuple[tuple[int, int], tuple[int, int] | None]) -> tuple[int, int] | None:
    """The lines reviewdog's GitLab reporter suggests over (`suggestion:-0+N` from the start line); None
    when it skips the suggestion, which it does for a range without an end (one whole line)."""
    (start, _), end = rng
    return None if end is None else (start, start + (end[0] - start))


# --- the tests ---------------------------------------------------------------------------------------


def test_fixes_reach_every_output_and_the_patch_applies(tmp_path: Path, fake_api: Any, sdk_env: dict[str, str]) -> None:
    repo = _repo(tmp_path / "repo")
    _script(fake_api)
    before = repo_state(repo)
    run, patch = _review(repo, sdk_env, tmp_path / "out")
    assert run.code == 1, run.proc.stderr  # the high findings gate
    assert repo_state(repo) == before  # ocr-hook never applies anything

    fixes = {f["message"]: f["fix"] for f in run.report["findings"]}
    assert fixes == EXPECTED_FIXES
    by_message = {f["message"]: f for f in run.report["findings"]}
    assert by_message["Removing the guard changes behaviour."]["anchor_note"]  # old side
    assert by_message["Invented code."]["anchored"] is False
    assert by_message["Reads everything at once."]["suggestion"] == "data = fh.read(1 << 20)"

    # The text report shows what would be applied: the re-indented code.
    assert "suggested fix:" in run.proc.stdout
    assert "+            with open(path) as fh:" in run.proc.stdout
    assert "+\t\t\tfmt.Println(i)" in run.proc.stdout

    # The patch: accepted by git against the index (the reviewed snapshot) and the work tree.
    text = patch.read_bytes()
    assert text.count(b"diff --git ") == 4
    assert b"\\ No newline at end of file" in text and b"\r\n" in text
    for args in (["--cached", "--check"], ["--index", "--check"], ["--check"]):
        proc = _git_apply(repo, patch, *args)
        assert proc.returncode == 0, (args, proc.stderr)

    # Applied to a copy (work tree, then index): exactly the expected files, CRLF and all.
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy)
    assert _git_apply(copy, patch).returncode == 0
    for path, expected in FIXED.items():
        assert (copy / path).read_bytes() == expected.encode(), path
    assert _git_apply(copy, patch, "--cached").returncode == 0
    for path, expected in FIXED.items():
        assert git(copy, "cat-file", "blob", f":{path}").encode() == expected.encode(), path

    # SARIF: fixes pass the schema and the multitool with GitHub's rules.
    validate_sarif(run.out_dir / "report.sarif")
    results = {r["message"]["text"].split("\n")[0]: r for r in run.sarif["runs"][0]["results"]}
    with_fix = {m for m, r in results.items() if "fixes" in r}
    assert with_fix == {m for m, fix in EXPECTED_FIXES.items() if fix}
    for message, result in results.items():
        if message not in with_fix:
            continue
        change = result["fixes"][0]["artifactChanges"][0]
        assert change["artifactLocation"] == result["locations"][0]["physicalLocation"]["artifactLocation"]
        (replacement,) = change["replacements"]
        assert set(replacement["deletedRegion"]) == {"startLine", "endLine"}
        assert not replacement["insertedContent"]["text"].endswith("\n")
        assert result["fixes"][0]["description"]["text"]

    # reviewdog's reading: each suggestion is line-based, on the result's own file and lines (what
    # GitHub requires of a suggested change), and those are exactly the finding's anchored lines.
    read = reviewdog_suggestions(run.sarif, repo.resolve())
    assert len(read) == len(with_fix)
    patched_by_reviewdog = {path: AFTER[path].split("\n") for path in AFTER}
    for entry in sorted(read, key=lambda e: -e["range"][0][0]):
        (suggestion,) = entry["suggestions"]
        assert suggestion["path"] == entry["path"]
        assert suggestion["range"] == entry["range"]
        lines = _line_based(suggestion["range"])
        assert lines is not None
        finding = by_message[entry["message"].split("\n")[0]]
        assert finding["path"] == entry["path"]
        assert lines == (finding["start_line"], finding["end_line"]) == (
            finding["fix"]["start_line"], finding["fix"]["end_line"])
        assert suggestion["text"] == finding["fix"]["replacement"]
        gitlab = _gitlab_lines(suggestion["range"])
        assert gitlab == (None if lines[0] == lines[1] else lines)  # multi-line fixes only, on GitLab
        # a suggested change replaces those lines with the text: the same file as the patch gives
        target = patched_by_reviewdog[entry["path"]]
        eol = "\r" if target[lines[0] - 1].endswith("\r") else ""
        target[lines[0] - 1 : lines[1]] = [line + eol for line in suggestion["text"].split("\n")]
    for path, lines in patched_by_reviewdog.items():
        assert "\n".join(lines) == FIXED[path], path


def test_commit_scope_patch_applies_to_a_checkout_of_the_commit(tmp_path: Path, fake_api: Any,
                                                                 sdk_env: dict[str, str]) -> None:
    repo = _repo(tmp_path / "repo")
    commit_all(repo, "feature")
    _script(fake_api)
    run, patch = _review(repo, sdk_env, tmp_path / "out", "--commit", "HEAD")
    assert {f["message"]: f["fix"] for f in run.report["findings"]} == EXPECTED_FIXES
    proc = _git_apply(repo, patch, "--check")
    assert proc.returncode == 0, proc.stderr
    assert _git_apply(repo, patch).returncode == 0  # the scratch repo is ours to change
    for path, expected in FIXED.items():
        assert (repo / path).read_bytes() == expected.encode(), path


def test_staged_scope_patch_is_against_the_index_not_the_work_tree(tmp_path: Path, fake_api: Any,
                                                                   sdk_env: dict[str, str]) -> None:
    repo = _repo(tmp_path / "repo")
    # an unstaged edit right inside the fixed lines: the work tree no longer matches the patch
    write(repo, GO, GO_AFTER.replace("println(i)", "println(i, i)"))
    _script(fake_api)
    run, patch = _review(repo, sdk_env, tmp_path / "out")
    assert run.report["findings"]
    assert _git_apply(repo, patch, "--cached", "--check").returncode == 0
    assert _git_apply(repo, patch, "--check").returncode != 0


def test_no_fix_writes_an_empty_patch_over_a_stale_one(tmp_path: Path, fake_api: Any, sdk_env: dict[str, str]) -> None:
    repo = _repo(tmp_path / "repo")
    fake_api.script(main_opening(STORE), [Reply([tool_use("code_comment", {"comments": [
        _c("No suggestion here.", "fh = open(path)", None)]})])])
    out = tmp_path / "out"
    out.mkdir()
    (out / "fixes.patch").write_text("stale patch from an earlier run\n")
    run, patch = _review(repo, sdk_env, out)
    assert [f["fix"] for f in run.report["findings"]] == [None]
    assert patch.read_bytes() == b""
    assert "fixes" not in run.sarif["runs"][0]["results"][0]


def test_patch_output_in_a_missing_directory_fails_before_any_request(tmp_path: Path, fake_api: Any,
                                                                      sdk_env: dict[str, str]) -> None:
    repo = _repo(tmp_path / "repo")
    proc = run_cli(repo, "review", "--patch-output", str(tmp_path / "nowhere" / "fixes.patch"), env=sdk_env)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "nowhere" in proc.stderr
    assert fake_api.requests == []


def test_patch_output_setting_in_the_config_file(tmp_path: Path, fake_api: Any, sdk_env: dict[str, str]) -> None:
    repo = _repo(tmp_path / "repo")
    # The user's own settings file names it (a repository's .ocr-hook.yaml may not: issue 58 item 6).
    patch = tmp_path / "fixes.patch"
    mine = tmp_path / "mine.yaml"
    mine.write_text(f"patch_output: {patch}\nfilter_mode: nofilter\nreview_filter: false\n")
    fake_api.script(main_opening(SPACED), [Reply([tool_use("code_comment", {"comments": COMMENTS[SPACED]})])])
    proc = run_cli(repo, "review", "--no-cache", "--format", "json", "--config", str(mine), "--", SPACED,
                   env=sdk_env)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["findings"][0]["fix"] == EXPECTED_FIXES["Subtracts."]
    assert _git_apply(repo, patch, "--cached", "--check").returncode == 0


def test_a_patch_never_shows_a_secret(tmp_path: Path, fake_api: Any, sdk_env: dict[str, str]) -> None:
    """The model saw the token masked and quotes it masked: the finding still gets its fix (in JSON and
    SARIF, which carry only the new text), but the patch, whose context would show the token, leaves
    that file out and says so."""
    token = "ghp_" + "Zq8rT2mW9xK4vN7bL1cF6hJ3pS5dG0aY8eUi"
    path = "app/config.py"
    repo = make_repo(tmp_path / "repo")
    write(repo, path, "import os\n\nTIMEOUT = 5\n")
    commit_all(repo, "base")
    write(repo, path, f'import os\n\nGITHUB_TOKEN = "{token}"\nTIMEOUT = 5\n')
    git(repo, "add", path)
    fake_api.script(main_opening(path), [Reply([tool_use("code_comment", {"comments": [
        _c("Hard-coded token.", 'GITHUB_TOKEN = "[MASKED-SECRET]"', 'GITHUB_TOKEN = os.environ["GITHUB_TOKEN"]',
           "critical")]})])])
    run, patch = _review(repo, sdk_env, tmp_path / "out")
    (finding,) = run.report["findings"]
    assert finding["fix"] == {"start_line": 3, "end_line": 3,
                              "replacement": 'GITHUB_TOKEN = os.environ["GITHUB_TOKEN"]'}
    assert patch.read_bytes() == b""
    assert any(path in note and "left out of the patch" in note for note in run.report["notes"])
    for output in (patch, *run.out_dir.iterdir()):
        assert token.encode() not in output.read_bytes(), output
    assert token not in run.proc.stdout + run.proc.stderr


def test_a_cached_review_gives_the_same_fixes_and_patch(tmp_path: Path, fake_api: Any, sdk_env: dict[str, str]) -> None:
    repo = _repo(tmp_path / "repo")
    _script(fake_api)
    reports, patches = [], []
    for n in (1, 2):
        patch = tmp_path / f"fixes-{n}.patch"
        proc = run_cli(repo, "review", "--format", "json", "--no-review-filter", "--filter-mode", "nofilter",
                       "--cache-dir", str(tmp_path / "cache"), "--patch-output", str(patch), env=sdk_env)
        assert proc.returncode == 1, proc.stderr
        reports.append(json.loads(proc.stdout))
        patches.append(patch.read_bytes())
    assert sorted(reports[1]["coverage"]["cached"]) == sorted(AFTER)
    assert [f["fix"] for f in reports[1]["findings"]] == [f["fix"] for f in reports[0]["findings"]]
    assert {f["message"]: f["fix"] for f in reports[1]["findings"]} == EXPECTED_FIXES
    assert patches[1] == patches[0] and patches[0]


def test_nothing_to_review_still_replaces_a_stale_patch(tmp_path: Path, fake_api: Any, sdk_env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo")
    write(repo, "a.py", "x = 1\n")
    commit_all(repo, "base")
    patch = tmp_path / "fixes.patch"
    patch.write_text("stale\n")
    proc = run_cli(repo, "review", "--patch-output", str(patch), env=sdk_env)
    assert proc.returncode == 0, proc.stderr
    assert patch.read_bytes() == b""
    assert fake_api.requests == []
