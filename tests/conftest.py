"""Shared fixtures. Fake Messages API: `fake_api`, `sdk_env`, `sdk_env_without_key` (see tests/fake_api.py).

Isolation (tests/hermetic.py): every process of the run (the controller and each xdist worker) and every test
gets an empty home of its own; git has no user or system configuration and a fixed identity (gitrepo).
A skip not on tests/skip_allowlist.py fails the run (tests/skip_guard.py).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import gitrepo  # noqa: F401  (isolates git for this process; imports hermetic first)
import hermetic
import pytest
import skip_guard
from fake_api import FakeMessagesAPI
from hypothesis import settings

# Until the first test's own home exists (collection, session and module fixtures), the process has an
# empty one too.
_PROCESS_HOME = Path(tempfile.mkdtemp(prefix="ocr-hook-tests-home-"))
atexit.register(shutil.rmtree, _PROCESS_HOME, ignore_errors=True)
hermetic.isolate_home(_PROCESS_HOME)

# Hypothesis would replay examples saved by earlier runs (.hypothesis/ in the working directory): each run
# stands on its own. Unit tests are not timed: hypothesis's 200 ms per-example deadline would fail a property
# on a busy machine (and shrink the "failure" at length). The rest of the active profile stays (under CI=true
# hypothesis's own "ci" profile).
settings.register_profile("ocr-hook", parent=settings.default, database=None, deadline=None)
settings.load_profile("ocr-hook")


def pytest_configure(config: pytest.Config) -> None:
    skip_guard.install(config)
    if getattr(config.option, "loadscopereorder", None) is not None:
        config.option.loadscopereorder = False  # SLOWEST_FILES' order, as --no-loadscope-reorder (xdist 3.6+)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than there are cores. Part of the suite waits (the fake API's held replies
    and deadlines, pre-commit and pip installs on I/O), so on 2 cores a third worker takes the run from
    148 s to 133 s (measured with the forked CLI, tests/forked_cli.py)."""
    return (os.cpu_count() or 1) + 1


# The files that take longest (wall time with their module fixtures, from `pytest --durations=0` summed per file),
# slowest first: under `--dist loadfile` a worker takes the next file in the queue when it is nearly done with its
# own, so the long files start first and the short ones fill in at the end. xdist (3.6 and later) would reorder
# the queue by the number of tests in each file, which put test_precommit_hook.py (11 tests, the longest file)
# last of all; pytest_configure switches that off. A stale list costs balance, never a result.
SLOWEST_FILES = ("test_precommit_hook.py", "test_hook_managers.py", "test_action.py", "test_repo_integrity.py",
                 "test_bench_quality.py", "test_mcp_server.py", "test_lsp.py", "test_memory_e2e.py",
                 "test_cli_review.py", "test_github_review.py", "test_fault_matrix.py", "test_apply_scopes.py",
                 "test_checks_e2e.py",
                 "test_checks_forge_overrides.py", "test_change_exemptions.py", "test_dismiss.py", "test_doctor.py",
                 "test_claude_code_provider.py", "test_reports_sarif.py", "test_reports_merge_sarif.py",
                 "test_warm.py", "test_repo_scale.py", "test_delegate.py", "test_docs_commands.py",
                 "test_secrets_never_leave.py", "test_claude_code_failures.py", "test_delegate_gate.py",
                 "test_publish_azure.py", "test_claude_code_isolation.py", "test_portability.py",
                 "test_validators.py", "test_scan.py", "test_forked_cli.py", "test_guidance.py",
                 "test_publish_bitbucket.py", "test_anchoring_properties.py", "test_publish_hostile.py",
                 "test_fuzz_parsing.py", "test_claude_code_recipes.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


TEST_API_KEY = "test-key-not-secret"


# ------------------------------------------------------------------------------------------ fake Messages API


@pytest.fixture
def fake_api() -> Iterator[FakeMessagesAPI]:
    """A started fake Messages API on 127.0.0.1, closed after the test."""
    with FakeMessagesAPI() as fake:
        yield fake


def _isolate_sdk(monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    # SDK 2.x resolves credentials from ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN, then ANTHROPIC_PROFILE,
    # workload-identity variables, and profile files under ANTHROPIC_CONFIG_DIR or ~/.config/anthropic;
    # other ANTHROPIC_* variables add headers, other providers' keys or telemetry. None may leak in.
    for name in list(os.environ):
        if name.startswith("ANTHROPIC_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
    # A proxy configured on the machine must not capture requests to the local fake.
    for name in ("NO_PROXY", "no_proxy"):
        current = os.environ.get(name, "")
        monkeypatch.setenv(name, ",".join(x for x in (current, "127.0.0.1", "localhost") if x))


@pytest.fixture
def sdk_env(fake_api: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """os.environ pointed at the fake with a dummy key; returns a copy of the whole environment (for a
    subprocess's env=..., or to derive variants from). With ANTHROPIC_API_KEY set the SDK reads no profile
    or credentials file."""
    _isolate_sdk(monkeypatch, fake_api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_API_KEY)
    return dict(os.environ)


@pytest.fixture
def sdk_env_without_key(
    fake_api: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """Like sdk_env but with no credential at all. ANTHROPIC_CONFIG_DIR points at an empty directory so the
    SDK cannot fall back to the real user's profile (it then raises CredentialsError when constructed)."""
    _isolate_sdk(monkeypatch, fake_api.url)
    config_dir: Path = tmp_path_factory.mktemp("anthropic-config-empty")
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(config_dir))
    return dict(os.environ)


# ------------------------------------------------------------------------------------------ isolation


@pytest.fixture(autouse=True)
def _private_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty HOME and XDG directories per test: nothing from the user's home (~/.gitconfig, a warm
    ~/.cache, tool settings) and nothing another test left, such as the result cache's findings, which
    default to the user cache directory."""
    for name, value in hermetic.home_env(tmp_path_factory.mktemp("home")).items():
        monkeypatch.setenv(name, value)
