"""Settings layers and their errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocr_hook.errors import ConfigError
from ocr_hook.settings import load


def test_defaults_come_from_the_shipped_config():
    s = load(None, environ={})
    assert s.fail_on == "high"
    assert s.filter_mode == "diff_context"
    assert s.concurrency == 8
    assert s.price_for(s.model) is not None


def test_layers_override_in_order(tmp_path: Path):
    (tmp_path / ".ocr-hook.yaml").write_text("fail_on: medium\nconcurrency: 3\nmax_cost: 0.5\n")
    s = load(tmp_path, environ={"OCR_HOOK_CONCURRENCY": "5", "OCR_HOOK_MAX_COST": "0.25"},
             flags={"max_cost": 0.1, "fail_on": None})
    assert s.fail_on == "medium"  # file
    assert s.concurrency == 5  # env over file
    assert s.max_cost == 0.1  # flag over env


def test_config_flag_replaces_the_repo_file(tmp_path: Path):
    (tmp_path / ".ocr-hook.yaml").write_text("fail_on: low\n")
    other = tmp_path / "ci.yaml"
    other.write_text("fail_on: critical\n")
    assert load(tmp_path, str(other), environ={}).fail_on == "critical"


def test_user_pricing_extends_the_shipped_table(tmp_path: Path):
    (tmp_path / ".ocr-hook.yaml").write_text(
        "model: my-proxy-model\npricing:\n  my-proxy-model: {input: 1, output: 2, cache_write: 1.5, cache_read: 0.1}\n")
    s = load(tmp_path, environ={})
    assert s.price_for("my-proxy-model").output == 2.0
    assert s.price_for("claude-haiku-4-5") is not None


def test_list_settings_from_env_are_comma_separated():
    s = load(None, environ={"OCR_HOOK_EXCLUDE": "docs/,*.md"})
    assert s.exclude == ("docs/", "*.md")


@pytest.mark.parametrize(("text", "needle"), [
    ("colour: red\n", "unknown setting 'colour'"),
    ("fail_on: severe\n", "'fail_on' must be one of critical, high, medium, low, never"),
    ("concurrency: many\n", "'concurrency' must be a whole number"),
    ("concurrency: 0\n", "'concurrency' must be a positive number"),
    ("review_filter: 'yes'\n", "'review_filter' must be true or false"),
    ("exclude: docs/\n", "'exclude' must be a list of strings"),
    ("pricing:\n  m: {input: 1}\n", "pricing for 'm' must be"),
    ("- a\n- b\n", "expected a mapping of settings"),
    ("fail_on: [\n", ".ocr-hook.yaml"),
])
def test_bad_repo_config_names_key_file_and_expectation(tmp_path: Path, text: str, needle: str):
    (tmp_path / ".ocr-hook.yaml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load(tmp_path, environ={})
    message = str(info.value)
    assert needle in message
    assert ".ocr-hook.yaml" in message
    assert "\n" not in message


def test_bad_env_value_names_the_variable():
    with pytest.raises(ConfigError, match="OCR_HOOK_TIMEOUT"):
        load(None, environ={"OCR_HOOK_TIMEOUT": "soon"})
    with pytest.raises(ConfigError, match="unknown setting 'colour'"):
        load(None, environ={"OCR_HOOK_COLOUR": "red"})


def test_missing_config_file_is_an_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="config file not found"):
        load(tmp_path, str(tmp_path / "nope.yaml"), environ={})


def test_the_commit_time_override_the_readme_names_is_no_unknown_setting(tmp_path: Path) -> None:
    """README: `OCR_HOOK_COMMIT_TIME=1` (or 0) overrides the commit-time guess; loading the settings took it for an
    unknown setting and every command exited 2. Through the CLI, as a user types it."""
    from gitrepo import git, make_repo, run_cli, write

    repo = make_repo(tmp_path / "repo")
    write(repo, "a.py", "x = 1\n")
    git(repo, "add", "a.py")
    proc = run_cli(repo, "preview", env={"OCR_HOOK_COMMIT_TIME": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "effort: quick (OCR_HOOK_COMMIT_TIME=1)" in proc.stdout
    with pytest.raises(ConfigError, match="unknown setting 'no_such'"):
        load(tmp_path, environ={"OCR_HOOK_NO_SUCH": "1"})
