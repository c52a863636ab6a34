"""Issue 22, compatible servers: the fake API behaving like Ollama, vLLM, LiteLLM or a strict proxy,
through the real CLI and the real SDK over HTTP. A server that can do the job gets a complete review;
one that cannot fails the file with a reason naming the cause, so the run is incomplete (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_support import main_opening
from e2e_support import (
    CALC_PATH,
    EARLY_MESSAGE,
    assert_incomplete_everywhere,
    assert_one_line,
    calc_repo,
    comment,
    comment_turn,
    run_review,
)
from fake_api import FakeMessagesAPI, Fault, Reply, ServerMode, error_json, task_done, tool_use
from gitrepo import write

from ocr_hook.agent import compat
from ocr_hook.budget.tokens import estimate_tokens

OTHER_FILES = {f"mod{n}.py": f"def f{n}(x):\n    return x + {n}\n" for n in range(3)}
LOCAL_MODEL = "qwen3-coder:30b"
BIG_PATH = "table.py"
BIG_FILE = "".join(f"RATE_{n} = {n} * 0.0125  # the rate of band {n}, from the 2026 schedule\n" for n in range(200))
FREE = {"input": 0, "output": 0, "cache_write": 0, "cache_read": 0}


def _carries_cache_marker(body: dict[str, object]) -> bool:
    return "cache_control" in json.dumps(body)


def _local_model_config(repo: Path, **extra: object) -> None:
    settings = {"model": LOCAL_MODEL, "pricing": {LOCAL_MODEL: FREE}, "review_filter": False, **extra}
    write(repo, ".ocr-hook.yaml", json.dumps(settings))


# --- a server that rejects cache_control ------------------------------------------------------------


def test_cache_control_rejected_once_then_left_out(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                   sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo", OTHER_FILES)
    fake_api.mode = ServerMode(reject_fields=("cache_control",))
    fake_api.script(main_opening(CALC_PATH), [comment_turn(), task_done()])

    run = run_review(repo, sdk_env, tmp_path / "out", "--concurrency", "4")

    assert run.code == 0, run.proc.stderr
    assert run.report["status"] == "complete"
    assert [f["message"] for f in run.report["findings"]] == [EARLY_MESSAGE]
    rejected = [r for r in fake_api.requests if r.status == 400]
    assert rejected and all(_carries_cache_marker(r.body) for r in rejected)
    # At most one rejected request per file (the files were in flight together), and none after a
    # file's first: every later request went without a marker.
    for path in [CALC_PATH, *OTHER_FILES]:
        mine = fake_api.requests_for(main_opening(path))
        assert sum(1 for r in mine if r.status == 400) <= 1, path
        assert all(not _carries_cache_marker(r.body) for r in mine[1:]), path
        assert all(r.status == 200 for r in mine[1:]), path
    answered = [r for r in fake_api.requests if r.status == 200]
    assert answered and not any(_carries_cache_marker(r.body) for r in answered)
    assert len(rejected) <= 1 + len(OTHER_FILES)
    notes = " ".join(run.report["notes"])
    assert "cache_control" in notes and "left out for the rest of the run" in notes
    assert "Extra inputs are not permitted" in notes


def test_a_400_that_keeps_coming_is_retried_once_never_in_a_loop(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                 sdk_env: dict[str, str]) -> None:
    """A server that answers every request with the same rejection, marker or not: one retry without the
    marker, then the file fails with the server's message."""
    repo = calc_repo(tmp_path / "repo")
    fake_api.fail_all(Fault(status=400, body=error_json(400, "system.0.cache_control: Extra inputs are not permitted")))

    run = run_review(repo, sdk_env, tmp_path / "out")

    assert run.code == 3
    assert_incomplete_everywhere(run)
    state, reason = run.coverage_state(CALC_PATH)
    assert state == "failed" and "Extra inputs are not permitted" in reason
    assert_one_line(reason)
    assert len(fake_api.requests) == 2
    assert _carries_cache_marker(fake_api.requests[0].body)
    assert not _carries_cache_marker(fake_api.requests[1].body)


def test_other_400s_are_not_retried(tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    fake_api.fail_all(Fault(status=400, body=error_json(400, "max_tokens: Input should be less than 8192")))

    run = run_review(repo, sdk_env, tmp_path / "out")

    assert run.code == 3
    assert len(fake_api.requests) == 1
    assert "max_tokens" in run.coverage_state(CALC_PATH)[1]


def test_litellm_rejection_wording_is_understood(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                 sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    fake_api.mode = ServerMode(reject_fields=("cache_control",), rejection_style="litellm")
    fake_api.script(CALC_PATH, [comment_turn(), task_done()])

    run = run_review(repo, sdk_env, tmp_path / "out")

    assert run.code == 0 and run.report["status"] == "complete"
    assert sum(1 for r in fake_api.requests if r.status == 400) == 1
    assert "UnsupportedParamsError" in " ".join(run.report["notes"])


def test_effort_and_thinking_rejected_by_a_proxy_are_dropped(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                              sdk_env: dict[str, str]) -> None:
    """A LiteLLM proxy whose Models API describes the model (so thinking and effort are sent) but whose
    backend takes neither: each is rejected once, then left out."""
    repo = calc_repo(tmp_path / "repo", OTHER_FILES)
    fake_api.models.register("claude-sonnet-5-5")
    fake_api.mode = ServerMode(reject_fields=("output_config", "thinking"), rejection_style="litellm")
    fake_api.script(main_opening(CALC_PATH), [comment_turn(), task_done()])

    run = run_review(repo, sdk_env, tmp_path / "out", "--effort", "standard", "--concurrency", "1")

    assert run.code == 0 and run.report["status"] == "complete"
    rejected = [r for r in fake_api.requests if r.status == 400]
    assert len(rejected) == 2  # once per field, for the whole run
    assert {"output_config", "thinking"} <= set(rejected[0].body)
    later = fake_api.requests[len(rejected):]
    assert later and all(r.status == 200 and "thinking" not in r.body and "output_config" not in r.body
                         for r in later)
    notes = " ".join(run.report["notes"])
    assert "`output_config`" in notes and "`thinking`" in notes and "UnsupportedParamsError" in notes


# --- a server that cuts prompts, a model without tool use, a model priced 0 --------------------------


def test_a_server_that_cuts_prompts_fails_the_file_naming_the_context_length(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    # A file whose first request is well over 4,000 estimated tokens, as most real reviews are.
    repo = calc_repo(tmp_path / "repo", {BIG_PATH: BIG_FILE})
    fake_api.mode = ServerMode(input_fraction=0.1, prompt_cache=False)

    run = run_review(repo, sdk_env, tmp_path / "out", BIG_PATH)

    assert run.code == 3
    assert_incomplete_everywhere(run)
    state, reason = run.coverage_state(BIG_PATH)
    assert state == "failed"
    assert "OLLAMA_CONTEXT_LENGTH" in reason and "context length" in reason
    assert_one_line(reason)
    # The cut request was answered and billed; nothing more was sent for the file (no blind review).
    assert len(fake_api.requests) == 1
    assert run.report["usage"]["requests"] == 1


# About 7,000 tokens in its first request as a real tokeniser counts them (3.5 bytes a token).
SEVEN_K_FILE = "".join(f"RATE_{n} = {n} * 0.0125  # the rate of band {n}, from the 2026 schedule\n"
                       for n in range(229))


@pytest.mark.parametrize("context_length", [4_096, 2_048])
def test_ollamas_default_context_cutting_a_7000_token_prompt_fails_the_file(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str], context_length: int) -> None:
    """Ollama's default 4,096-token context (every machine under 24 GiB of VRAM) and its old 2,048: the server
    keeps what fits and counts only that: about half of the estimate for 4,096 (a third, the old rule, missed it)."""
    repo = calc_repo(tmp_path / "repo", {BIG_PATH: SEVEN_K_FILE})
    fake_api.mode = ServerMode(bytes_per_token=3.5, context_length=context_length)

    run = run_review(repo, sdk_env, tmp_path / "out", BIG_PATH)

    assert run.code == 3
    state, reason = run.coverage_state(BIG_PATH)
    assert state == "failed"
    assert f"counted only {context_length:,} of about" in reason and "OLLAMA_CONTEXT_LENGTH" in reason
    assert_one_line(reason)
    assert len(fake_api.requests) == 1  # nothing more was sent for the file: no blind review


@pytest.mark.parametrize("bytes_per_token", [3.16, 4.0])  # 95 % and 75 % of the estimate
def test_real_token_counts_are_never_taken_for_a_cut(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                     sdk_env: dict[str, str], bytes_per_token: float) -> None:
    """A conversation of several turns whose prompt grows, counted as real tokenisers count code."""
    repo = calc_repo(tmp_path / "repo", {BIG_PATH: SEVEN_K_FILE})
    fake_api.mode = ServerMode(bytes_per_token=bytes_per_token, prompt_cache=False)
    fake_api.script(main_opening(BIG_PATH), [
        Reply([tool_use("file_read", {"file_path": CALC_PATH})]),
        Reply([tool_use("file_read_diff", {"path_array": [CALC_PATH]})]),
        comment_turn(comment(code="RATE_7 = 7 * 0.0125", content="Float arithmetic on money rates.")),
        task_done()])

    run = run_review(repo, sdk_env, tmp_path / "out", BIG_PATH)

    assert run.code == 0 and run.report["status"] == "complete", run.report["coverage"]
    turns = fake_api.requests_for(main_opening(BIG_PATH))
    assert len(turns) == 4
    assert all(not b.get("is_error") for r in turns[1:] for b in r.body["messages"][-1]["content"]
               if b["type"] == "tool_result")  # real tool answers: the prompt grew each turn


# A translation catalogue as Django ships them (its Malayalam and Marathi ones failed every scan): each
# character of these scripts is 3 bytes in UTF-8, and the API counts such text at more tokens per character
# than Latin text, never at a third of what its bytes would say.
PO_PATH = "locale/ml/LC_MESSAGES/django.po"
PO_FILE = "".join(f'msgid "Enter a valid value ({n})."\nmsgstr "സാധുവായ മൂല്യം നൽകുക ({n}). वैध मूल्य प्रविष्ट करा."\n\n'
                  for n in range(150))


def test_a_file_in_malayalam_and_devanagari_is_reviewed_not_taken_for_a_cut(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo", {PO_PATH: PO_FILE})
    quote = 'msgstr "സാധുവായ മൂല്യം നൽകുക (7). वैध मूल्य प्रविष्ट करा."'
    fake_api.script(main_opening(PO_PATH), [
        comment_turn(comment(code=quote, content="Two languages in one catalogue.", suggestion=None)), task_done()])

    run = run_review(repo, sdk_env, tmp_path / "out", PO_PATH)

    assert run.coverage_state(PO_PATH) == ("reviewed", ""), run.report["coverage"]
    assert run.code == 0 and run.report["status"] == "complete"  # a medium finding does not block
    assert [f["message"] for f in run.report["findings"]] == ["Two languages in one catalogue."]
    first = fake_api.requests_for(main_opening(PO_PATH))[0]
    sent = json.dumps(first.body, ensure_ascii=False)
    assert len(sent.encode()) > 1.3 * len(sent)  # the non-Latin text weighs in the request's bytes


def test_a_count_that_stops_growing_while_the_prompt_grows_is_a_cut(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                                    sdk_env: dict[str, str]) -> None:
    """A prompt just over the server's context: its first count is 80 % of the estimate (no sign), but the
    next turn adds a file and the count stays put (the second sign)."""
    # The quick profile's first (and main-loop) request: about 7,400 tokens; the server keeps 6,600 (76 %).
    # (A new file goes out once, numbered: twice the text it took when its diff went out beside it.)
    repo = calc_repo(tmp_path / "repo", {BIG_PATH: SEVEN_K_FILE[:14_600], "notes.py": SEVEN_K_FILE[:3_000]})
    fake_api.mode = ServerMode(bytes_per_token=3.5, context_length=6_600)
    fake_api.script(main_opening(BIG_PATH), [Reply([tool_use("file_read", {"file_path": "notes.py"})]), task_done()])

    run = run_review(repo, sdk_env, tmp_path / "out", BIG_PATH, "--effort", "quick")

    state, reason = run.coverage_state(BIG_PATH)
    assert state == "failed" and run.code == 3
    assert "the prompt grew by about" in reason and "OLLAMA_CONTEXT_LENGTH" in reason
    assert [r.usage["input_tokens"] for r in fake_api.requests_for(main_opening(BIG_PATH))] == [6_600, 6_600]


def test_a_full_prompt_on_a_server_without_caching_is_not_mistaken_for_a_cut(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    """Ollama's usual answer: the markers are ignored and the whole input is counted as plain input."""
    repo = calc_repo(tmp_path / "repo")
    fake_api.mode = ServerMode(prompt_cache=False)
    fake_api.script(CALC_PATH, [comment_turn(), task_done()])

    run = run_review(repo, sdk_env, tmp_path / "out")

    assert run.code == 0 and run.report["status"] == "complete"
    usage = run.report["usage"]
    assert usage["cache_read_input_tokens"] == 0 and usage["cache_creation_input_tokens"] == 0


def test_a_model_that_only_answers_text_fails_naming_tool_use(tmp_path: Path, fake_api: FakeMessagesAPI,
                                                              sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo")
    fake_api.mode = ServerMode(text_only=True)

    run = run_review(repo, sdk_env, tmp_path / "out")

    assert run.code == 3
    assert_incomplete_everywhere(run)
    state, reason = run.coverage_state(CALC_PATH)
    assert state == "failed" and "may not support tool use" in reason
    assert_one_line(reason)
    assert len(fake_api.requests) == 4  # the first turn and three reminders, then it gives up


def test_a_local_model_priced_zero_reviews_and_the_token_cap_still_holds(
        tmp_path: Path, fake_api: FakeMessagesAPI, sdk_env: dict[str, str]) -> None:
    repo = calc_repo(tmp_path / "repo", OTHER_FILES)
    _local_model_config(repo)
    fake_api.mode = ServerMode(prompt_cache=False)
    fake_api.script(CALC_PATH, [comment_turn(), task_done()])

    run = run_review(repo, sdk_env, tmp_path / "out", "--concurrency", "1")
    assert run.code == 0 and run.report["status"] == "complete"
    assert run.report["usage"]["cost_usd"] == 0
    assert {r.body["model"] for r in fake_api.requests} == {LOCAL_MODEL}

    # A token cap that fits about one request: the other files are not reviewed, price 0 or not.
    before = len(fake_api.requests)
    cap = 8_000 + 4_096
    capped = run_review(repo, sdk_env, tmp_path / "capped", "--concurrency", "1", "--max-tokens", str(cap))
    assert capped.code == 3
    assert capped.report["status"] == "incomplete"
    assert capped.report["usage"]["cost_usd"] == 0
    second = [r for r in fake_api.requests[before:] if r.usage]
    assert second and sum(sum(r.usage.values()) for r in second) <= cap
    skipped = [entry["reason"] for entry in capped.report["coverage"]["skipped"]]
    assert any("token cap" in reason for reason in skipped), capped.report["coverage"]


# --- the pure rules, against what real servers answer ------------------------------------------------

PAYLOAD = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": [
    {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}],
    "thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}}


@pytest.mark.parametrize(("status", "body", "fields"), [
    # Vertex AI's and strict proxies' pydantic schemas.
    (400, error_json(400, "messages.0.content.0.cache_control: Extra inputs are not permitted"), ["cache_control"]),
    (400, error_json(400, "*.cache_control: Extra inputs are not permitted"), ["cache_control"]),
    # LiteLLM without drop_params.
    (400, {"error": {"message": "litellm.UnsupportedParamsError: anthropic does not support parameters: "
                                "{'output_config': {'effort': 'low'}}, for model=x", "type": None, "code": "400"}},
     ["output_config"]),
    # OpenAI-style wording used by several gateways.
    (400, {"error": {"message": "Unsupported parameter: 'thinking' is not supported with this model.",
                     "param": "thinking"}}, ["thinking"]),
    # A FastAPI gateway returning pydantic's validation errors as they are.
    (422, {"detail": [{"type": "extra_forbidden", "loc": ["body", "output_config"], "msg": "Extra inputs are not "
                       "permitted", "input": {"effort": "low"}}]}, ["output_config"]),
    # A model without the effort setting, in the words of the setting.
    (400, error_json(400, "effort is not supported on this model"), ["output_config"]),
    # The API's own message for a model without adaptive thinking.
    (400, error_json(400, "adaptive thinking is not supported on this model"), ["thinking"]),
    # Mentions a field without rejecting it: a conversation error, not a compatibility one.
    (400, error_json(400, "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. "
                          "When `thinking` is enabled, a final `assistant` message must start with a thinking block"),
     []),
    (400, error_json(400, "max_tokens: Input should be less than or equal to 8192"), []),
    (500, error_json(500, "cache_control: Extra inputs are not permitted"), []),
    (422, {"detail": [{"type": "missing", "loc": ["body", "model"], "msg": "Field required",
                       "input": {"cache_control": 1}}]}, []),
])
def test_rejected_fields(status: int, body: object, fields: list[str]) -> None:
    assert compat.rejected_fields(status, body, PAYLOAD) == fields


def test_a_field_the_request_did_not_carry_is_never_dropped() -> None:
    bare = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    body = error_json(400, "thinking: Extra inputs are not permitted")
    assert compat.rejected_fields(400, body, bare) == []


def test_without_fields_strips_nested_markers_and_keeps_the_original() -> None:
    stripped = compat.without_fields(PAYLOAD, ["cache_control", "thinking"])
    assert "cache_control" not in json.dumps(stripped) and "thinking" not in stripped
    assert stripped["output_config"] == {"effort": "low"}
    assert "cache_control" in json.dumps(PAYLOAD) and "thinking" in PAYLOAD


@pytest.mark.parametrize(("estimate", "usage", "cut"), [
    (10_000, {"input_tokens": 2_000}, True),
    (10_000, {"input_tokens": 200, "cache_read_input_tokens": 7_000}, False),  # cached input counts
    (10_000, {"input_tokens": 3_400}, True),  # a third of the old rule passed it
    (9_333, {"input_tokens": 4_096}, True),  # 7,000 real tokens cut to Ollama's default 4,096
    (10_000, {"input_tokens": 7_500}, False),  # real tokenisers: 75-95 % of the estimate
    (10_000, {"input_tokens": 9_500}, False),
    (3_900, {"input_tokens": 10}, False),  # small requests are never judged
    (10_000, {"input_tokens": 0}, False),  # no count at all is not a cut
])
def test_prompt_cut(estimate: int, usage: dict[str, int], cut: bool) -> None:
    assert (compat.prompt_cut(estimate, usage) is not None) is cut


def test_thinking_blocks_of_earlier_turns_are_not_judged() -> None:
    """The API may leave earlier turns' thinking out of the input it counts: no cut for that."""
    thought = {"type": "thinking", "thinking": "x" * 60_000, "signature": "s" * 400}
    payload = {"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "review " * 1_000}]},
        {"role": "assistant", "content": [thought, {"type": "text", "text": "ok"}]},
        {"role": "user", "content": [{"type": "text", "text": "go on"}]}]}
    whole = json.dumps(payload, ensure_ascii=False)
    judged = compat.judged_estimate(payload, whole)
    assert judged < 4_000 < estimate_tokens(whole)
    assert compat.prompt_cut(judged, {"input_tokens": 1_800}) is None
    plain = {**payload, "messages": payload["messages"][:1]}
    assert compat.judged_estimate(plain, json.dumps(plain)) == estimate_tokens(json.dumps(plain))


@pytest.mark.parametrize(("text", "per_char"), [
    ("Введите правильное значение. ", 0.3), ("올바른 값을 입력하세요. ", 0.5), ("സാധുവായ മൂല്യം നൽകുക. ", 0.5)])
def test_non_latin_text_is_judged_by_its_characters(text: str, per_char: float) -> None:
    """Cyrillic takes 2 bytes a character, Hangul and Malayalam 3, yet tokenisers count them at no fewer
    tokens a character than English (a third of a token or more): counts below that are no cut."""
    payload = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": text * 1_500}]}
    sent = json.dumps(payload, ensure_ascii=False)
    judged = compat.judged_estimate(payload, sent)
    assert judged < estimate_tokens(sent) * 0.7
    assert compat.prompt_cut(judged, {"input_tokens": int(len(sent) * per_char)}) is None
    assert compat.prompt_cut(judged, {"input_tokens": len(sent) // 10}) is not None  # a cut still is


def test_prompt_counts_second_sign() -> None:
    counts = compat.PromptCounts()
    assert counts.stalled(5_000, {"input_tokens": 3_900}) is None  # a first turn is never compared
    assert counts.stalled(5_800, {"input_tokens": 4_500}) is None  # grew with the prompt (75 %)
    assert counts.stalled(5_900, {"input_tokens": 4_500}) is None  # grew too little to judge
    reason = counts.stalled(7_000, {"input_tokens": 4_510})
    assert reason is not None and "grew by about 1,100 tokens" in reason and "OLLAMA_CONTEXT_LENGTH" in reason
    shrunk = compat.PromptCounts(estimate=9_000, reported=7_000)
    assert shrunk.stalled(4_000, {"input_tokens": 3_000}) is None  # compaction: both went down
    assert compat.PromptCounts(estimate=5_000, reported=0).stalled(7_000, {"input_tokens": 10}) is None  # no count
