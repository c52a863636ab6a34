"""Effort profiles end to end (DESIGN.md section 8): real SDK → HTTP → the fake Messages and Models API.

The fake behaves like the real API here: a registered model answers `GET /v1/models/{id}` with its
capabilities and rejects what it does not take; with thinking on, a tool-use turn sent back without its
(signed) thinking blocks, or with them altered, is a 400.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_support import (
    PLAN_TOOLS,
    is_filter,
    keep_all,
    main_opening,
    plan_opening,
    review_job,
    staged_repo,
    tool_names,
)
from fake_api import FakeMessagesAPI, Reply, redacted_thinking, text, thinking, tool_use

from ocr_hook.agent import review_files
from ocr_hook.agent.request_options import THINKING_ROOM
from ocr_hook.effort import EffortPlan, profile
from ocr_hook.errors import ConfigError
from ocr_hook.guidance.rules import rules_of
from ocr_hook.settings import load

MODEL = "claude-sonnet-5-5"  # the shipped default model
MAX_OUTPUT = 4096  # the shipped default max_output_tokens
SAMPLING = ("temperature", "top_p", "top_k")

CALC_BEFORE = "def add(a, b):\n    return a + b\n"
CALC_AFTER = "def add(a, b):\n    return a - b\n\n\ndef mean(values):\n    return sum(values) / len(values)\n"


def comment(content: str, code: str, severity: str) -> dict[str, Any]:
    return {"content": content, "existing_code": code, "severity": severity, "category": "bug"}


def done() -> dict[str, Any]:
    return tool_use("task_done", {"state": "DONE"})


def assert_no_sampling(body: dict[str, Any]) -> None:
    assert not [name for name in SAMPLING if name in body]
    assert "tool_choice" not in body


@pytest.fixture
def calc_repo(tmp_path: Path) -> Path:
    return staged_repo(tmp_path / "repo", {"app/calc.py": CALC_BEFORE}, {"app/calc.py": CALC_AFTER})


# --- deep: adaptive thinking and effort high through a multi-turn review ---------------------------------


def test_deep_thinks_plans_and_passes_thinking_back_through_the_tool_loop(
        calc_repo: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    fake_api.models.register(MODEL)
    fake_api.handle(is_filter, keep_all)
    fake_api.script(plan_opening("app/calc.py"), [
        Reply([thinking("Who calls add()?"), tool_use("code_search", {"search_text": "add("})]),
        Reply([thinking("Enough context."), text("- check the sign in add()")]),
    ])
    fake_api.script(main_opening("app/calc.py"), [
        Reply([thinking("Line 2 changed the sign."), redacted_thinking(),
               tool_use("file_find", {"query_name": "calc"})]),
        Reply([thinking("It is a bug."), tool_use("code_comment", {"comments": [
            comment("add() subtracts.", "    return a - b", "high")]})]),
        Reply([thinking("Nothing else."), done()]),
    ])
    with review_job(calc_repo, sdk_env, effort="deep") as job:
        result = review_files(job)

    assert fake_api.errors == [] and [r.status for r in fake_api.requests] == [200] * len(fake_api.requests)
    assert [(f.path, f.state, f.effort) for f in result.files] == [("app/calc.py", "reviewed", "deep")]
    assert [f.message for f in result.findings] == ["add() subtracts."]
    plan = fake_api.requests_for(plan_opening("app/calc.py"))
    main = fake_api.requests_for(main_opening("app/calc.py"))
    assert len(plan) == 2 and len(main) == 3  # deep plans every file, even a 3-line change
    assert tool_names(plan[0]) == PLAN_TOOLS
    for req in (*plan, *main):
        assert req.body["thinking"] == {"type": "adaptive"}
        assert req.body["output_config"] == {"effort": "high"}
        assert req.body["max_tokens"] == MAX_OUTPUT + THINKING_ROOM["deep"]
        assert_no_sampling(req.body)
    # Each turn's thinking went back unchanged (the fake checks the signature; a 400 otherwise).
    first_turn = main[1].body["messages"][1]["content"]
    assert [b["type"] for b in first_turn] == ["thinking", "redacted_thinking", "tool_use"]
    assert first_turn[0]["thinking"] == "Line 2 changed the sign." and first_turn[0]["signature"]
    assert main[2].body["messages"][1]["content"] == first_turn
    # The review filter is a single-shot request: no thinking there.
    [filtered] = [r for r in fake_api.requests if is_filter(r.body)]
    assert "thinking" not in filtered.body
    assert len(fake_api.models.requests) == 1  # one lookup for the run


def test_the_fake_rejects_a_loop_that_alters_thinking_blocks(fake_api: FakeMessagesAPI, sdk_env: dict[str, str],
                                                             calc_repo: Path) -> None:
    """The check the deep test relies on can fail: the second request of a real review, replayed with its
    thinking block altered or dropped, is a 400."""
    import anthropic

    fake_api.models.register(MODEL)
    fake_api.script(main_opening("app/calc.py"), [
        Reply([thinking("ok"), tool_use("file_find", {"query_name": "calc"})]), Reply([done()])])
    with review_job(calc_repo, sdk_env, effort="standard") as job:
        assert review_files(job).files[0].state == "reviewed"
    second = fake_api.requests_for(main_opening("app/calc.py"))[1].body
    turn = second["messages"][1]["content"]
    assert turn[0]["type"] == "thinking"
    client = anthropic.Anthropic(base_url=fake_api.url, api_key="x", max_retries=0)
    for content in ([{**turn[0], "thinking": "not what the model thought"}, *turn[1:]], turn[1:]):
        messages = [*second["messages"][:1], {"role": "assistant", "content": content}, *second["messages"][2:]]
        with pytest.raises(anthropic.BadRequestError):
            client.messages.create(**{**second, "messages": messages})


# --- quick: one turn, no thinking, no plan, no filter for a low comment ----------------------------------


def long_file(lines: int, marker_at: int) -> str:
    return "".join(f"MARKER_{n} = {n}\n" if n == marker_at else f"value_{n} = {n}\n" for n in range(1, lines + 1))


def test_quick_is_one_request_for_a_low_comment_with_the_whole_file_in_it(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    before = long_file(300, 290)
    after = "".join(f"changed_{n} = {n}\n" for n in range(1, 61)) + before.split("\n", 60)[60]
    repo = staged_repo(tmp_path / "repo", {"big.py": before}, {"big.py": after})
    fake_api.models.register(MODEL)
    fake_api.handle(is_filter, keep_all)
    fake_api.script(main_opening("big.py"), [Reply([
        tool_use("code_comment", {"comments": [comment("Name could be clearer.", "changed_3 = 3", "low")]}),
        done()])])
    with review_job(repo, sdk_env, effort="quick") as job:
        assert job.files[0].changed_lines >= job.settings.plan_threshold  # standard would plan this file
        result = review_files(job)

    [only] = fake_api.requests
    assert only.body["output_config"] == {"effort": "low"} and "thinking" not in only.body
    assert only.body["max_tokens"] == MAX_OUTPUT
    assert_no_sampling(only.body)
    # The whole file is in the first message, line 290 included (far from the hunk at the top).
    opening = only.first_user_text
    assert "290|MARKER_290 = 290" in opening and "all 300 lines" in opening
    assert [(f.path, f.state, f.effort) for f in result.files] == [("big.py", "reviewed", "quick")]
    assert [(f.message, f.start_line) for f in result.findings] == [("Name could be clearer.", 3)]


def test_quick_filters_a_comment_that_could_block(calc_repo: Path, fake_api: FakeMessagesAPI,
                                                  sdk_env: dict[str, str]) -> None:
    fake_api.handle(is_filter, keep_all)
    fake_api.script(main_opening("app/calc.py"), [Reply([
        tool_use("code_comment", {"comments": [comment("add() subtracts.", "    return a - b", "high")]}), done()])])
    with review_job(calc_repo, sdk_env, effort="quick") as job:
        result = review_files(job)
    assert len(fake_api.requests) == 2 and is_filter(fake_api.requests[1].body)
    assert len(result.findings) == 1


def test_quick_stops_after_eight_rounds(calc_repo: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    fake_api.script(main_opening("app/calc.py"),
                    [Reply([tool_use("file_find", {"query_name": f"name{n}"})]) for n in range(20)])
    with review_job(calc_repo, sdk_env, effort="quick") as job:
        assert job.settings.max_rounds == 30
        result = review_files(job)
    assert len(fake_api.requests) == 8
    assert result.files[0].state == "failed" and "limit of 8 rounds" in result.files[0].reason


def test_a_long_file_is_shown_around_its_hunks(tmp_path: Path, fake_api: FakeMessagesAPI,
                                               sdk_env: dict[str, str]) -> None:
    before = long_file(1000, 100)
    after = before.replace("value_500 = 500\n", "value_500 = 'five hundred'\n")
    repo = staged_repo(tmp_path / "repo", {"big.py": before}, {"big.py": after})
    with review_job(repo, sdk_env, effort="quick") as job:
        review_files(job)
    opening = fake_api.requests[0].first_user_text
    # The hunk is lines 497-503 (the change and git's 3 lines of context); 40 lines either side of it.
    assert "457|value_457 = 457" in opening and "543|value_543 = 543" in opening
    assert "456|" not in opening and "544|" not in opening and "MARKER_100" not in opening
    assert "of 1000" in opening


def test_the_file_text_is_masked_like_everything_sent(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                      sdk_env: dict[str, str]) -> None:
    key = "AKIA" + "Q3EXAMPLEKEY7ZZ2"
    before = f"aws_key = '{key}'\n" + "".join(f"x{n} = {n}\n" for n in range(50))
    repo = staged_repo(tmp_path / "repo", {"conf.py": before}, {"conf.py": before + "y = 1\n"})
    with review_job(repo, sdk_env, effort="quick") as job:
        review_files(job)
    raw = b"".join(r.raw for r in fake_api.requests)
    assert key.encode() not in raw
    assert "1|aws_key = " in fake_api.requests[0].first_user_text  # the line is there, masked


# --- auto ------------------------------------------------------------------------------------------------


@pytest.fixture
def two_files(tmp_path: Path) -> Path:
    return staged_repo(tmp_path / "repo", {"src/util.py": "x = 1\n", "src/auth.py": "y = 1\n"},
                       {"src/util.py": "x = 2\n", "src/auth.py": "y = 2\n"})


def first_request(fake: FakeMessagesAPI, path: str) -> dict[str, Any]:
    return fake.requests_for(main_opening(path))[0].body


def test_auto_under_pre_commit_is_quick_except_on_a_risky_path(two_files: Path, fake_api: FakeMessagesAPI,
                                                               sdk_env: dict[str, str]) -> None:
    fake_api.models.register(MODEL)
    env = {**sdk_env, "PRE_COMMIT": "1", "CI": ""}
    with review_job(two_files, env) as job:
        assert job.settings.effort == "auto"
        result = review_files(job)
    assert {f.path: f.effort for f in result.files} == {"src/util.py": "quick", "src/auth.py": "standard"}
    util, auth = first_request(fake_api, "src/util.py"), first_request(fake_api, "src/auth.py")
    assert "thinking" not in util and util["output_config"] == {"effort": "low"}
    assert auth["thinking"] == {"type": "adaptive"} and auth["output_config"] == {"effort": "medium"}


def test_auto_in_ci_is_standard_and_deep_on_a_risky_path(two_files: Path, fake_api: FakeMessagesAPI,
                                                         sdk_env: dict[str, str]) -> None:
    fake_api.models.register(MODEL)
    env = {k: v for k, v in sdk_env.items() if k != "PRE_COMMIT"} | {"CI": "true"}
    with review_job(two_files, env) as job:
        result = review_files(job)
    assert {f.path: f.effort for f in result.files} == {"src/util.py": "standard", "src/auth.py": "deep"}
    util, auth = first_request(fake_api, "src/util.py"), first_request(fake_api, "src/auth.py")
    assert util["thinking"] == {"type": "adaptive"} and util["output_config"] == {"effort": "medium"}
    assert auth["output_config"] == {"effort": "high"}
    assert fake_api.requests_for(plan_opening("src/auth.py")) and not fake_api.requests_for(plan_opening("src/util.py"))


# --- capabilities ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("models_api", ["no thinking, no effort", "404"])
def test_without_capabilities_neither_thinking_nor_output_config(calc_repo: Path, fake_api: FakeMessagesAPI,
                                                                 sdk_env: dict[str, str], models_api: str) -> None:
    if models_api != "404":
        fake_api.models.register(MODEL, adaptive=False, efforts=())
    fake_api.handle(is_filter, keep_all)
    with review_job(calc_repo, sdk_env, effort="deep") as job:
        result = review_files(job)
    assert result.files[0].state == "reviewed" and result.files[0].effort == "deep"
    assert fake_api.requests and all(r.status == 200 for r in fake_api.requests)
    for req in fake_api.requests:
        assert "thinking" not in req.body and "output_config" not in req.body
        assert req.body["max_tokens"] <= MAX_OUTPUT
    assert [r.status for r in fake_api.models.requests] == [200 if models_api != "404" else 404]


def test_capability_lookup_at_most_once_a_day(calc_repo: Path, fake_api: FakeMessagesAPI,
                                              sdk_env: dict[str, str]) -> None:
    fake_api.models.register(MODEL)
    for _ in range(2):  # two runs of the same day, sharing the user cache directory
        with review_job(calc_repo, sdk_env, effort="standard") as job:
            result = review_files(job)
        assert result.files[0].state == "reviewed"
    assert len(fake_api.models.requests) == 1
    main = fake_api.requests_for(main_opening("app/calc.py"))
    assert len(main) == 2 and all(r.body["thinking"] == {"type": "adaptive"} for r in main)
    records = list((Path(sdk_env["XDG_CACHE_HOME"]) / "ocr-hook" / "capabilities").glob("*.json"))
    assert len(records) == 1


def test_the_budget_cap_holds_with_thinking_on(calc_repo: Path, fake_api: FakeMessagesAPI,
                                               sdk_env: dict[str, str]) -> None:
    """Every turn thinks to nearly its max_tokens (billed as output). The cap still holds: each request's
    worst case includes its room for thinking, and a tight cap shrinks that room instead of overspending."""
    fake_api.models.register(MODEL)

    def thinker(body: dict[str, Any]) -> Reply:
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return Reply([thinking(f"step {turn}"), tool_use("file_find", {"query_name": f"n{turn}"})],
                     usage={"output_tokens": body["max_tokens"] - 50})

    fake_api.handle(lambda body: main_opening("app/calc.py") in str(body["messages"][0]), thinker)
    cap = 0.5
    with review_job(calc_repo, sdk_env, effort="standard", max_cost=cap) as job:
        result = review_files(job)
        price = job.settings.pricing[MODEL]
    assert result.files[0].state == "failed" and "cost cap" in result.files[0].reason
    assert fake_api.billed_cost(job.settings.pricing) <= cap and result.usage.cost_usd <= cap
    sent = [r.body["max_tokens"] for r in fake_api.requests]
    room = MAX_OUTPUT + THINKING_ROOM["standard"]
    assert sent[0] == room  # room for thinking while the budget has it
    assert min(sent) < room  # shrunk as the cap came near
    # Thinking is billed as output: at the full room, the cap allows only a few such turns.
    assert len(sent) < cap / (room * price.output / 1e6) + 3


# --- the result cache and the profile --------------------------------------------------------------------


def test_the_profile_is_part_of_the_result_cache_key(calc_repo: Path, fake_api: FakeMessagesAPI,
                                                     sdk_env: dict[str, str], tmp_path: Path) -> None:
    fake_api.handle(is_filter, keep_all)
    cache = tmp_path / "results"
    with review_job(calc_repo, sdk_env, effort="quick", cache_dir=cache, cache=True) as job:
        review_files(job)
    sent = len(fake_api.requests)
    with review_job(calc_repo, sdk_env, effort="quick", cache_dir=cache, cache=True) as job:
        again = review_files(job)
    assert len(fake_api.requests) == sent and again.files[0].state == "cached" and again.files[0].effort == "quick"
    with review_job(calc_repo, sdk_env, effort="deep", cache_dir=cache, cache=True) as job:
        deeper = review_files(job)
    assert len(fake_api.requests) > sent and deeper.files[0].state == "reviewed"


# --- the plan per path (pure) ----------------------------------------------------------------------------


def plan_for(tmp_path: Path, config: str, environ: dict[str, str]) -> EffortPlan:
    (tmp_path / ".ocr-hook.yaml").write_text(config, encoding="utf-8")
    return EffortPlan(load(tmp_path, None, {}, environ={}), environ)


@pytest.mark.parametrize(("path", "risky"), [
    ("src/auth/tokens.py", True), ("app/login.py", True), ("web/session.ts", True), ("lib/crypto/aes.go", True),
    ("security/policy.py", True), ("core/permissions.py", True), ("shop/payment.py", True), ("billing/inv.rb", True),
    ("config/secrets.py", True), ("db/migrations/0001_init.py", True), ("sql/report.sql", True),
    (".github/workflows/ci.yml", True), (".gitlab-ci.yml", True),
    ("src/util.py", False), ("README.md", False), ("tests/test_math.py", False),
])
def test_shipped_risk_paths(tmp_path: Path, path: str, risky: bool) -> None:
    plan = plan_for(tmp_path, "{}\n", {"PRE_COMMIT": "1"})
    assert plan.risky(path) is risky
    assert plan.for_path(path).name == ("standard" if risky else "quick")


def test_rules_effort_and_explicit_effort(tmp_path: Path) -> None:
    config = ("risk_paths: ['vendor/**']\n"
              "rules:\n"
              "  - {paths: ['docs/**'], effort: quick}\n"
              "  - {paths: ['core/**'], effort: deep, instructions: 'Check invariants.'}\n")
    plan = plan_for(tmp_path, config, {"CI": "true"})
    assert plan.for_path("docs/a.md") == profile("quick", "rules[1]")
    assert plan.for_path("core/x.py").label == "deep (rules[2])"
    assert plan.for_path("vendor/x.py") == profile("deep", "risky path")
    assert plan.for_path("src/auth.py") == profile("standard", "CI")  # risk_paths replaced the shipped list
    explicit = plan_for(tmp_path, config + "effort: quick\n", {"CI": "true"})
    assert {explicit.for_path(p).name for p in ("docs/a.md", "core/x.py", "vendor/x.py")} == {"quick"}


@pytest.mark.parametrize(("config", "message"), [
    ("effort: fast\n", "setting 'effort' must be one of auto, quick, standard, deep"),
    ("rules: [{paths: ['a/**'], effort: max}]\n", "'effort' must be one of quick, standard, deep"),
    ("rules: [{paths: ['a/**']}]\n", "give exactly one of 'instructions' and 'instructions_file'"),
])
def test_bad_effort_settings(tmp_path: Path, config: str, message: str) -> None:
    (tmp_path / ".ocr-hook.yaml").write_text(config, encoding="utf-8")
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        rules_of(load(tmp_path, None, {}, environ={}))  # a rule's entries are guidance's to parse


def test_the_settings_check_only_the_rules_outer_shape(tmp_path: Path) -> None:
    (tmp_path / ".ocr-hook.yaml").write_text("rules: [{paths: ['a/**'], effort: max}]\n", encoding="utf-8")
    settings = load(tmp_path, None, {}, environ={})  # loads: the entry is parsed where it is used
    assert settings.rules.items == ({"paths": ["a/**"], "effort": "max"},)
    assert settings.rules.source == ".ocr-hook.yaml"
    (tmp_path / ".ocr-hook.yaml").write_text("rules: [42]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^\.ocr-hook\.yaml: setting 'rules' item 1: must be a mapping"):
        load(tmp_path, None, {}, environ={})


def test_a_bad_risk_path_glob_is_a_config_error(tmp_path: Path) -> None:
    settings = load(tmp_path, None, {}, environ={})._replace(risk_paths=("!",))
    with pytest.raises(ConfigError, match="setting 'risk_paths'"):
        EffortPlan(settings, {})


# --- compaction with thinking on -------------------------------------------------------------------------


def test_compaction_keeps_what_the_api_requires_with_thinking_on(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                 sdk_env: dict[str, str]) -> None:
    """Notes replace older turns and older tool output is elided while every turn carries signed thinking:
    the fake answers 400 to any request whose pending tool call lost or changed its thinking blocks."""
    from test_compaction import WINDOW, big_repo, main_loop, main_requests, notes_requests, read

    root = big_repo(tmp_path)
    fake_api.models.register(MODEL)
    notes = "NOTES: read 1-260 of big.py; all calls to compute() pass literals."
    fake_api.handle(lambda body: "Pause the review of" in str(body["messages"][-1]["content"][-1]),
                    lambda body: Reply([thinking("Summing up."), text(notes)], delay_s=0.5))

    def thoughtful(reply: Reply, n: int) -> Reply:
        return Reply([thinking(f"Reading part {n}."), *reply.blocks])

    turns = [read(1, 260), read(300, 20), read(400, 60), read(500, 170), read(700, 5)]
    main_loop(fake_api, [thoughtful(r, n) for n, r in enumerate(turns)])
    with review_job(root, sdk_env, context_window=WINDOW, plan_threshold=10_000, effort="standard") as job:
        result = review_files(job)

    assert [f.state for f in result.files] == ["reviewed"], result.files
    assert fake_api.errors == [] and all(r.status == 200 for r in fake_api.requests)
    asked = notes_requests(fake_api)
    assert asked and asked[0].body["thinking"] == {"type": "adaptive"}  # same settings: the cached prefix holds
    mains = main_requests(fake_api)
    adopted = [r for r in mains if notes in str(r.body["messages"][0]["content"])]
    assert adopted
    for req in adopted:
        last_assistant = req.body["messages"][-2]["content"]
        assert last_assistant[0]["type"] == "thinking" and last_assistant[0]["signature"]


def test_max_input_tokens_replaces_the_default_context_window(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                              sdk_env: dict[str, str]) -> None:
    from test_compaction import WINDOW, big_repo, main_loop, notes_requests, reads

    fake_api.models.register(MODEL, max_input_tokens=WINDOW)
    fake_api.handle(lambda body: "Pause the review of" in str(body["messages"][-1]["content"][-1]),
                    lambda body: Reply([text("NOTES: nothing yet.")]))
    main_loop(fake_api, reads(100, 6))  # within quick's 8 rounds
    with review_job(big_repo(tmp_path), sdk_env, plan_threshold=10_000, effort="quick") as job:
        assert job.settings.context_window == 200_000  # the shipped default: the model's own limit applies
        result = review_files(job)
    assert [f.state for f in result.files] == ["reviewed"]
    assert notes_requests(fake_api)  # compaction started at 60 % of 24k, not of 200k


def test_the_quality_bench_has_a_config_per_profile_and_each_loads(tmp_path: Path) -> None:
    configs = Path(__file__).resolve().parents[1] / "bench" / "quality_configs"
    efforts = {load(tmp_path, str(c), {}, environ={}).effort for c in configs.glob("effort-*.yaml")}
    assert efforts == {"quick", "standard", "deep"}


def test_the_thinking_room_shrinks_to_what_the_budget_can_reserve() -> None:
    from ocr_hook.agent.request_options import fitting_max_tokens

    assert fitting_max_tokens(4096, 12288, lambda n: True) == 12288
    assert fitting_max_tokens(4096, 12288, lambda n: n <= 7000) == 6144
    assert fitting_max_tokens(4096, 12288, lambda n: False) == 4096  # the answer's own allowance stays
    assert fitting_max_tokens(4096, 4096, lambda n: False) == 4096
