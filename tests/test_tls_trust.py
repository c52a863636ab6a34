"""The SDK client's TLS trust (ocr_hook.agent.tls): built once per process for each trust setting, and always
the one the run's environment names. The real SDK over HTTPS to the fake API, with a CA of the suite's own
(tests/data/tls: a test CA and a certificate for 127.0.0.1 it signed, made for these tests only)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from agent_support import is_filter
from e2e_support import CALC_PATH, calc_repo
from fake_api import FakeMessagesAPI, Reply, task_done, text
from gitrepo import run_cli

from ocr_hook.agent import tls

TLS = Path(__file__).parent / "data" / "tls"
REVIEW = ("review", "--no-cache", "--no-memory", "--format", "json")


def subjects(context: object) -> set[str]:
    return {value for cert in context.get_ca_certs() for rdn in cert["subject"] for key, value in rdn
            if key == "commonName"}


def test_one_context_per_trust_setting_rebuilt_when_the_bundle_changes(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    system = tls.default_context()
    assert tls.default_context() is system  # built once
    assert "ocr-hook test CA" not in subjects(system)

    bundle = tmp_path / "bundle.pem"
    shutil.copyfile(TLS / "server.pem", bundle)  # a certificate, but not the CA
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    named = tls.default_context()
    assert named is not system and tls.default_context() is named
    assert "ocr-hook test CA" not in subjects(named)

    bundle.write_text((TLS / "ca.pem").read_text())  # the bundle updated in place: read again
    updated = tls.default_context()
    assert updated is not named and "ocr-hook test CA" in subjects(updated)

    monkeypatch.delenv("SSL_CERT_FILE")
    assert "ocr-hook test CA" not in subjects(tls.default_context())


@pytest.fixture
def https_api() -> FakeMessagesAPI:
    with FakeMessagesAPI(tls=(TLS / "server.pem", TLS / "server.key")) as fake:
        fake.handle(is_filter, lambda body: Reply([text('{"wrong": []}')]))
        fake.script(CALC_PATH, [task_done()])
        yield fake


def test_a_review_trusts_the_ca_its_environment_names_and_no_other(tmp_path: Path, https_api: FakeMessagesAPI,
                                                                   sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "calc")
    env = {**sdk_env, "ANTHROPIC_BASE_URL": https_api.url}
    env.pop("SSL_CERT_DIR", None)
    trusted = run_cli(repo, *REVIEW, env={**env, "SSL_CERT_FILE": str(TLS / "ca.pem")})
    assert trusted.returncode == 0, trusted.stderr
    assert json.loads(trusted.stdout)["coverage"]["reviewed"] == [CALC_PATH]
    sent = len(https_api.requests)
    assert sent >= 1

    env.pop("SSL_CERT_FILE", None)
    untrusted = run_cli(repo, *REVIEW, env=env)
    assert untrusted.returncode == 3, untrusted.stderr  # not reviewed
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr, untrusted.stderr
    assert len(https_api.requests) == sent  # no request got through
