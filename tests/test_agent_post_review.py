"""After the loop: anchoring, one re-location request per file, the review filter, deduplication."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from agent_support import is_filter, is_relocate, main_opening, review_job, staged_repo
from fake_api import FakeMessagesAPI, Fault, Reply, task_done, text, tool_use

from ocr_hook.agent import review_files
from ocr_hook.agent.post_review import DELETED_NOTE, parse_json_answer
from ocr_hook.findings import fingerprint

TOKEN = "ghp_" + "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5"
STORE_BEFORE = (
    "import json\n\n\n"
    "def load(path):\n    with open(path) as fh:\n        return json.load(fh)\n\n\n"
    "def legacy_save(path, data):\n    with open(path, \"w\") as fh:\n        json.dump(data, fh)\n"
)
STORE_AFTER = (
    f"import json\n\nGITHUB_TOKEN = \"{TOKEN}\"\n\n\n"
    "def load(path):\n    fh = open(path)\n    return json.load(fh)\n\n\n"
    "def save(path, data):\n    fh = open(path, \"w\")\n    json.dump(data, fh)\n"
)
PATH = "app/store.py"


def comment(content: str, code: str, severity: str = "medium", category: str = "bug") -> dict[str, str]:
    return {"content": content, "existing_code": code, "severity": severity, "category": category}


COMMENTS = [
    comment("LEAK: the file handle is never closed.", "    fh = open(path)"),
    comment("RETYPED: load() leaks its handle.", "file_handle = open(path)\nreturn json.load(file_handle)"),
    comment("FABRICATED: the cache is not invalidated.", "cache.invalidate(path)"),
    comment("DELETED: the context manager was removed.", "    with open(path, \"w\") as fh:"),
    comment("SECRET: a token is committed.", "GITHUB_TOKEN = \"[MASKED-SECRET]\"", "critical", "security"),
    comment("LIE: the relocation points at code that is not there.", "requests.get(url)"),
]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return staged_repo(tmp_path / "repo", {PATH: STORE_BEFORE}, {PATH: STORE_AFTER})


def numbers_by_marker(prompt: str) -> dict[str, int]:
    """Comment numbers in a re-location or filter prompt, keyed by the first word of each comment."""
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"Comment (\d+) \([^)]*\):\n([A-Z]+):", prompt)}


def relocate_answer(body: dict[str, Any]) -> Reply:
    numbers = numbers_by_marker(body["messages"][0]["content"][0]["text"])
    locations = [
        {"comment": numbers["RETYPED"], "code": "7|    fh = open(path)\n8|    return json.load(fh)"},
        {"comment": numbers["FABRICATED"], "code": None},
        {"comment": numbers["LIE"], "code": "requests.get(url, timeout=5)", "start_line": 7},
    ]
    return Reply([text("Here you go:\n```json\n" + json.dumps({"locations": locations}) + "\n```")])


def test_anchoring_relocation_filter(store: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    fake_api.handle(is_relocate, relocate_answer)
    fake_api.handle(is_filter, lambda body: Reply([text(json.dumps(
        {"wrong": [numbers_by_marker(body["messages"][0]["content"][0]["text"])["DELETED"]], "reasons": {}}))]))
    fake_api.script(main_opening(PATH), [Reply([tool_use("code_comment", {"comments": COMMENTS})]), task_done()])
    with review_job(store, sdk_env) as job:
        result = review_files(job)

    relocations = [r for r in fake_api.requests if is_relocate(r.body)]
    assert len(relocations) == 1  # one request for all unanchored comments of the file
    prompt = relocations[0].body["messages"][0]["content"][0]["text"]
    assert set(numbers_by_marker(prompt)) == {"RETYPED", "FABRICATED", "LIE"}
    assert "7|    fh = open(path)" in prompt and "1|import json" in prompt
    assert "tools" not in relocations[0].body and "tool_choice" not in relocations[0].body
    # Nothing sent anywhere carries the secret; the model saw the mask.
    assert all(TOKEN not in r.raw.decode() for r in fake_api.requests)
    assert any("[MASKED-SECRET]" in r.raw.decode() for r in fake_api.requests)

    found = {f.message.split(":")[0]: f for f in result.findings}
    assert set(found) == {"LEAK", "RETYPED", "FABRICATED", "SECRET", "LIE"}  # DELETED dropped by the filter
    assert result.dropped == {"review_filter": 1}
    assert (found["LEAK"].start_line, found["LEAK"].end_line, found["LEAK"].anchored) == (7, 7, True)
    retyped = found["RETYPED"]
    assert (retyped.start_line, retyped.end_line, retyped.anchored) == (7, 8, True)
    assert retyped.extra["anchor_stage"] == "relocated"
    assert retyped.existing_code == "    fh = open(path)\n    return json.load(fh)"
    assert retyped.fingerprint == fingerprint(PATH, "bug", retyped.existing_code, retyped.message)
    for name in ("FABRICATED", "LIE"):  # nothing trusted that is not in the file: kept, unanchored
        assert (found[name].start_line, found[name].end_line, found[name].anchored) == (0, 0, False)
    assert (found["SECRET"].start_line, found["SECRET"].anchored) == (3, True)
    assert found["SECRET"].existing_code == 'GITHUB_TOKEN = "[MASKED-SECRET]"'
    assert any("secret" in note for note in result.notes)


def test_deleted_code_anchors_where_it_was(store: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    fake_api.script(main_opening(PATH), [Reply([tool_use("code_comment", {"comments": [COMMENTS[3]]})]),
                                         task_done()])
    with review_job(store, sdk_env, review_filter=False) as job:
        result = review_files(job)
    [finding] = result.findings
    assert finding.anchored and finding.anchor_note == DELETED_NOTE
    assert 11 <= finding.start_line <= 14  # where `save` replaced the deleted block
    assert not any(is_filter(r.body) or is_relocate(r.body) for r in fake_api.requests)


@pytest.mark.parametrize("answer", [
    Fault(status=400, times=10),
    Reply([text("I think comment one is probably fine but I'm not sure.")]),
    Reply([text("I can't help with that.")], stop_reason="refusal"),
    Reply([text('{"wrong": "all"}')]),
], ids=["api-error", "unparsable", "refusal", "wrong-shape"])
def test_a_failing_review_filter_keeps_every_comment(store: Path, fake_api: FakeMessagesAPI,
                                                     sdk_env: dict[str, str], answer: Reply | Fault) -> None:
    fake_api.handle(is_filter, lambda body: answer)
    fake_api.script(main_opening(PATH), [Reply([tool_use("code_comment", {"comments": COMMENTS[:1] + COMMENTS[4:5]})]),
                                         task_done()])
    with review_job(store, sdk_env) as job:
        result = review_files(job)
    assert sum(1 for r in fake_api.requests if is_filter(r.body)) == 1
    assert sorted(f.message.split(":")[0] for f in result.findings) == ["LEAK", "SECRET"]
    assert result.dropped == {}
    assert any("review filter" in note for note in result.notes)
    assert [f.state for f in result.files] == ["reviewed"]


def test_parse_json_answer_is_lenient() -> None:
    assert parse_json_answer('Sure! ```json\n{"wrong": [2]}\n```') == {"wrong": [2]}
    assert parse_json_answer("no json here {not json}") is None
    assert parse_json_answer('[1, 2] and {"a": 1}') == [1, 2]


def test_duplicates_on_the_same_lines_collapse_to_the_most_severe(store: Path, fake_api: FakeMessagesAPI,
                                                                  sdk_env: dict[str, str]) -> None:
    twice = [comment("LEAK: handle never closed.", "fh = open(path)", "low"),
             comment("LEAK: open() without close.", "+    fh = open(path)", "high")]
    fake_api.script(main_opening(PATH), [Reply([tool_use("code_comment", {"comments": twice[:1]})]),
                                         Reply([tool_use("code_comment", {"comments": twice[1:]})]),
                                         task_done()])
    with review_job(store, sdk_env, review_filter=False) as job:
        result = review_files(job)
    [finding] = result.findings
    assert (finding.message, str(finding.severity), finding.start_line) == ("LEAK: open() without close.", "high", 7)
    assert result.dropped == {"duplicates": 1}


# --- issue 27: the filter sees the evidence the main loop had ------------------------------------------------

GREET_BEFORE = "from app.text import normalise\n\n" + "".join(f"\n\ndef f{n}(x):\n    return x + {n}\n"
                                                                 for n in range(12))
GREET_AFTER = GREET_BEFORE + "\n\ndef greet(name):\n    return 'Hello, ' + normalise(name)\n"
NOT_DEFINED = comment("UNDEFINED: `normalise` is not defined in this file.",
                      "    return 'Hello, ' + normalise(name)", "high")
PROOF = "line 1 imports normalise from app.text"


def _filter_drops_the_undefined(body: dict[str, Any]) -> Reply:
    number = numbers_by_marker(body["messages"][0]["content"][0]["text"]).get("UNDEFINED")
    return Reply([text(json.dumps({"wrong": [number] if number else [], "reasons": {str(number): PROOF}}))])


def test_the_filter_sees_the_files_text_and_drops_what_it_disproves_with_the_reason(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    from gitrepo import run_cli

    repo = staged_repo(tmp_path / "repo", {"app/greet.py": GREET_BEFORE}, {"app/greet.py": GREET_AFTER})
    fake_api.handle(is_filter, _filter_drops_the_undefined)
    fake_api.script(main_opening("app/greet.py"), [Reply([tool_use("code_comment", {"comments": [NOT_DEFINED]})]),
                                                    task_done()])
    proc = run_cli(repo, "review", "--format", "json", "--no-cache", env=sdk_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)

    [judged] = [r for r in fake_api.requests if is_filter(r.body)]
    prompt = judged.body["messages"][0]["content"][0]["text"]
    assert "1|from app.text import normalise" in prompt  # the import, far outside the diff's hunk
    assert "+from app.text import normalise" not in prompt and "intent" not in prompt.lower()
    assert report["findings"] == []
    assert report["dropped"] == {"review_filter": 1, "comments": [{
        "path": "app/greet.py", "start_line": GREET_AFTER.count("\n"), "end_line": GREET_AFTER.count("\n"),
        "severity": "high", "category": "bug", "message": NOT_DEFINED["content"], "reason": PROOF,
        "by": "review_filter"}]}
    text_report = run_cli(repo, "review", "--no-cache", env={**sdk_env, "NO_COLOR": "1"}).stdout
    assert f"[HIGH] UNDEFINED: `normalise` is not defined in this file. — dropped by the review filter: {PROOF}" \
        in text_report


def test_the_evidence_string_reaches_the_filters_request(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                         sdk_env: dict[str, str]) -> None:
    """The context pack, rendered by its own module, is handed to finish_file as a string."""
    import asyncio

    from agent_support import settings_for

    from ocr_hook.agent.client import open_api
    from ocr_hook.agent.conversation import SecretMasker
    from ocr_hook.agent.post_review import finish_file
    from ocr_hook.budget.ledger import Budget
    from ocr_hook.changes.collect import diff_files
    from ocr_hook.changes.git import head_commit
    from ocr_hook.findings import Category, Comment, Severity
    from ocr_hook.secrets_mask import mask_secrets

    repo = staged_repo(tmp_path / "repo", {"app/greet.py": GREET_BEFORE}, {"app/greet.py": GREET_AFTER})
    (change,) = diff_files(str(repo), head_commit(str(repo)) or "", None, ["app/greet.py"])
    settings = settings_for(repo)
    fake_api.handle(is_filter, _filter_drops_the_undefined)
    evidence = f"app/text.py:1-2 (defined here)\ndef normalise(name):\n    return name.strip().title()\n{TOKEN}"
    comments = [Comment(path="app/greet.py", content=NOT_DEFINED["content"], existing_code=NOT_DEFINED["existing_code"],
                        severity=Severity.HIGH, category=Category.BUG)]

    async def run() -> Any:
        api = open_api(settings, sdk_env, Budget(max_cost_usd=1.0, max_tokens=10**6, deadline=10**12,
                                                 pricing=settings.pricing))
        try:
            return await finish_file(comments, change, GREET_AFTER, api=api, settings=settings,
                                     mask=SecretMasker(mask_secrets), evidence=evidence)
        finally:
            await api.aclose()

    result = asyncio.run(run())
    [judged] = [r for r in fake_api.requests if is_filter(r.body)]
    prompt = judged.body["messages"][0]["content"][0]["text"]
    assert "def normalise(name):\n    return name.strip().title()" in prompt
    assert TOKEN not in judged.raw.decode()  # the pack passes the secret mask like everything sent
    assert result.findings == [] and [d.reason for d in result.dropped_comments] == [PROOF]
