"""The fake Messages API, exercised through the real Anthropic SDK over HTTP (no mocks)."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import anthropic
import pytest
from fake_api import FakeMessagesAPI, Fault, Reply, redacted_thinking, task_done, text, thinking, tool_use

from ocr_hook.settings import Price

TOOLS = [
    {"name": "file_read", "description": "Read lines of a file.", "input_schema": {"type": "object"}},
    {"name": "task_done", "description": "Finish the file.", "input_schema": {"type": "object"}},
]


def client(fake: FakeMessagesAPI, **kwargs: Any) -> anthropic.Anthropic:
    options: dict[str, Any] = {"base_url": fake.url, "api_key": "x", "max_retries": 0, **kwargs}
    return anthropic.Anthropic(**options)


def send(c: anthropic.Anthropic, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
    return c.messages.create(model="claude-test", max_tokens=256, messages=messages, tools=TOOLS, **kwargs)  # type: ignore[arg-type]


def conversation(opening: str, assistant_turns: int) -> list[dict[str, Any]]:
    """A well-formed conversation with `assistant_turns` answered tool calls."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": opening}]
    for i in range(assistant_turns):
        call = {"type": "tool_use", "id": f"toolu_c{i}", "name": "file_read", "input": {}}
        messages.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_c{i}", "content": "1|x"}
        messages.append({"role": "user", "content": [result]})
    return messages


def test_non_latin_text_costs_more_tokens_a_character_than_ascii(fake_api: FakeMessagesAPI) -> None:
    """As the real API counts them: Malayalam (3 bytes a character in UTF-8) at more tokens than as many
    ASCII characters, never at the same 4 characters a token."""
    c = client(fake_api)
    # (the two lines have the same number of characters, 22)
    latin = send(c, [{"role": "user", "content": "Enter a valid value.. " * 400}]).usage.input_tokens
    malayalam = send(c, [{"role": "user", "content": "സാധുവായ മൂല്യം നൽകുക. " * 400}]).usage.input_tokens
    assert malayalam > 2 * latin


def raw_post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any], dict[str, str]]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), dict(err.headers)


def test_scripted_tool_use_round_trip(fake_api: FakeMessagesAPI) -> None:
    reading = Reply([text("Reading."), tool_use("file_read", {"file_path": "a.py"})])
    fake_api.script("review a.py", [reading, task_done()])
    c = client(fake_api)
    first = send(c, [{"role": "user", "content": "Please review a.py"}])
    assert isinstance(first, anthropic.types.Message)
    assert first.stop_reason == "tool_use"
    call = first.content[1]
    assert call.type == "tool_use" and call.name == "file_read" and call.input == {"file_path": "a.py"}
    assert call.id.startswith("toolu_")

    second = send(c, [
        {"role": "user", "content": "Please review a.py"},
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "1|x = 1"}]},
    ])
    assert [(b.name, b.input) for b in second.content] == [("task_done", {"state": "DONE"})]
    assert second.usage.input_tokens > first.usage.input_tokens  # the conversation grew
    recorded = fake_api.requests
    assert [r.status for r in recorded] == [200, 200]
    assert recorded[1].body["messages"][2]["content"][0]["tool_use_id"] == call.id
    assert recorded[0].headers["authorization"] == "Bearer x"  # SDK 2.x sends an API key as a bearer token
    assert [t["name"] for t in recorded[0].body["tools"]] == ["file_read", "task_done"]
    assert fake_api.requests_for("review a.py") == recorded


def test_turn_chosen_by_assistant_count_and_longest_match(fake_api: FakeMessagesAPI) -> None:
    fake_api.script("a.py", [Reply([text("a0")]), Reply([text("a1")]), Reply([text("a2")])])
    fake_api.script("lib/a.py", [Reply([text("lib0")]), Reply([text("lib1")])])
    c = client(fake_api)
    assert send(c, conversation("review a.py", 2)).content[0].text == "a2"
    assert send(c, conversation("review a.py", 0)).content[0].text == "a0"
    assert send(c, conversation("review lib/a.py", 1)).content[0].text == "lib1"
    past_end = send(c, conversation("review lib/a.py", 5))
    assert past_end.content[0].name == "task_done" and past_end.content[0].input == {"state": "DONE"}
    fake_api.default(lambda body: Reply([text("fallback")], stop_reason="max_tokens"))
    other = send(c, conversation("something else", 0))
    assert (other.content[0].text, other.stop_reason) == ("fallback", "max_tokens")


def test_handlers_come_before_scripts(fake_api: FakeMessagesAPI) -> None:
    fake_api.script("a.py", [Reply([text("script")])])
    fake_api.handle(lambda body: "FILTER" in str(body.get("system")), lambda body: Reply([text("filtered")]))
    c = client(fake_api)
    assert send(c, conversation("a.py", 0), system="FILTER the comments").content[0].text == "filtered"
    assert send(c, conversation("a.py", 0), system="review").content[0].text == "script"


def test_unanswered_tool_use_is_rejected(fake_api: FakeMessagesAPI) -> None:
    messages = conversation("review a.py", 1)
    messages[2]["content"][0]["tool_use_id"] = "toolu_other"
    with pytest.raises(anthropic.BadRequestError) as err:
        send(client(fake_api), messages)
    assert "toolu_c0" in str(err.value) and "tool_result" in str(err.value)
    assert err.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert err.value.response.headers["request-id"].startswith("req_")
    assert fake_api.requests[0].status == 400 and fake_api.billed()["requests"] == 0


def test_roles_must_alternate(fake_api: FakeMessagesAPI) -> None:
    with pytest.raises(anthropic.BadRequestError, match="alternate"):
        send(client(fake_api), [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])


def test_routes_and_authentication(fake_api: FakeMessagesAPI) -> None:
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode()
    status, error, headers = raw_post(fake_api.url + "/v1/complete", body, {"x-api-key": "k"})
    assert status == 404 and error["type"] == "error" and error["error"]["type"] == "not_found_error"
    status, error, _ = raw_post(fake_api.url + "/v1/messages", body, {"content-type": "application/json"})
    assert status == 401 and error["error"]["type"] == "authentication_error"
    status, message, headers = raw_post(fake_api.url + "/v1/messages", body, {"x-api-key": "k"})
    assert status == 200 and message["type"] == "message" and message["stop_sequence"] is None
    assert set(message["usage"]) >= {"input_tokens", "output_tokens", "cache_creation_input_tokens",
                                     "cache_read_input_tokens"}
    assert "request-id" in {k.lower() for k in headers}
    assert [r.status for r in fake_api.requests] == [404, 401, 200]  # faulted requests are recorded too


def test_429_retry_after_is_retried_by_the_sdk(fake_api: FakeMessagesAPI) -> None:
    fake_api.script("a.py", [Fault(429, headers={"retry-after": "0"}, then=Reply([text("after the wait")]))])
    answer = send(client(fake_api, max_retries=1), conversation("a.py", 0))
    assert answer.content[0].text == "after the wait"
    recorded = fake_api.requests
    assert [r.status for r in recorded] == [429, 200]
    assert [r.headers["x-stainless-retry-count"] for r in recorded] == ["0", "1"]
    assert fake_api.billed()["requests"] == 1


def test_fault_times_then_default(fake_api: FakeMessagesAPI) -> None:
    fake_api.script("a.py", [Fault(529, times=2)])
    c = client(fake_api)
    for _ in range(2):
        with pytest.raises(anthropic.APIStatusError) as err:
            send(c, conversation("a.py", 0))
        assert err.value.status_code == 529
    assert send(c, conversation("a.py", 0)).content[0].name == "task_done"


def test_fail_all_until_stopped_or_counted(fake_api: FakeMessagesAPI) -> None:
    c = client(fake_api)
    fake_api.fail_all(Fault(503))
    for _ in range(3):
        with pytest.raises(anthropic.InternalServerError):
            send(c, conversation("a.py", 0))
    fake_api.fail_all(Fault(500), times=1)
    with pytest.raises(anthropic.InternalServerError):
        send(c, conversation("a.py", 0))
    assert send(c, conversation("a.py", 0)).stop_reason == "tool_use"
    fake_api.fail_all(Fault(500))
    fake_api.fail_all(None)
    assert send(c, conversation("a.py", 0)).stop_reason == "tool_use"


def test_reset_mid_response_is_a_connection_error(fake_api: FakeMessagesAPI) -> None:
    fake_api.script("a.py", [Fault(200, reset=True, body={"padding": "x" * 2000})])
    with pytest.raises(anthropic.APIConnectionError) as err:
        send(client(fake_api), conversation("a.py", 0))
    causes = []
    cause: BaseException | None = err.value
    while cause is not None:
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    assert any(isinstance(c, ConnectionResetError) for c in causes)
    assert fake_api.billed()["requests"] == 0


def test_html_and_non_json_bodies_with_status_200(fake_api: FakeMessagesAPI) -> None:
    c = client(fake_api)
    fake_api.fail_all(Fault(200, body="<html><body>Bad gateway</body></html>", content_type="text/html"))
    result = send(c, conversation("a.py", 0))
    # The SDK does not raise here: for a non-JSON content type it returns the body text instead of a Message.
    assert isinstance(result, str) and not isinstance(result, anthropic.types.Message)
    fake_api.fail_all(Fault(200, body="this is not JSON"))  # claimed application/json
    with pytest.raises(json.JSONDecodeError):  # a bare ValueError, not an anthropic.APIError
        send(c, conversation("a.py", 0))


def test_stop_reason_override_and_invalid_tool_input(fake_api: FakeMessagesAPI) -> None:
    fake_api.script("a.py", [Reply([text("cut")], stop_reason="model_context_window_exceeded")])
    fake_api.script("b.py", [Reply([tool_use("task_done", '{"state": ')])])
    c = client(fake_api)
    assert send(c, conversation("a.py", 0)).stop_reason == "model_context_window_exceeded"
    broken = send(c, conversation("b.py", 0)).content[0]
    assert broken.type == "tool_use" and broken.input == '{"state": '  # a str, not a dict


def test_slow_answer_times_out_without_blocking_others(fake_api: FakeMessagesAPI) -> None:
    fake_api.script("slow.py", [Fault(500, delay_s=30, times=2)])
    with pytest.raises(anthropic.APITimeoutError):
        send(client(fake_api, timeout=0.3), conversation("slow.py", 0))
    outcome: list[BaseException] = []

    def wait_for_slow() -> None:
        try:
            send(client(fake_api), conversation("slow.py", 0))
        except BaseException as exc:
            outcome.append(exc)

    waiter = threading.Thread(target=wait_for_slow)
    waiter.start()
    assert fake_api.wait_for_requests(2)
    assert send(client(fake_api), conversation("fast.py", 0)).stop_reason == "tool_use"
    started = time.monotonic()
    fake_api.close()
    waiter.join(20)
    assert time.monotonic() - started < 20  # bounded, not a benchmark: the 30 s delay must not be waited out
    assert len(outcome) == 1 and isinstance(outcome[0], anthropic.APIConnectionError)


def _cached_request(question: str, system_chars: int) -> dict[str, Any]:
    return {
        "system": [
            {"type": "text", "text": "Review rules. " * (system_chars // 14), "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [{"role": "user", "content": question}],
    }


def test_prompt_caching_from_breakpoints(fake_api: FakeMessagesAPI) -> None:
    c = client(fake_api)
    first = send(c, **_cached_request("review a.py", 8000))
    second = send(c, **_cached_request("review b.py", 8000))
    assert first.usage.cache_read_input_tokens == 0 and first.usage.cache_creation_input_tokens > 1024
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0
    assert second.usage.input_tokens < first.usage.input_tokens + first.usage.cache_creation_input_tokens
    # Below the minimum cacheable prefix a breakpoint does nothing.
    small = [send(c, **_cached_request(q, 1000)) for q in ("x", "y")]
    assert all(u.usage.cache_read_input_tokens == u.usage.cache_creation_input_tokens == 0 for u in small)
    # Another model has its own cache.
    other = c.messages.create(model="claude-other", max_tokens=10, tools=TOOLS, **_cached_request("q", 8000))  # type: ignore[arg-type]
    assert other.usage.cache_read_input_tokens == 0 and other.usage.cache_creation_input_tokens > 0


def test_growing_conversation_reads_its_previous_turn(fake_api: FakeMessagesAPI) -> None:
    c = client(fake_api)
    messages = conversation("review a.py " + "diff line\n" * 600, 0)
    messages[0]["content"] = [{"type": "text", "text": messages[0]["content"], "cache_control": {"type": "ephemeral"}}]
    first = send(c, messages)
    messages += conversation("", 1)[1:]
    messages[-1]["content"][0]["cache_control"] = {"type": "ephemeral"}
    del messages[0]["content"][0]["cache_control"]  # moving the breakpoint keeps the cached prefix valid
    second = send(c, messages)
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens > 0
    assert 0 < second.usage.cache_creation_input_tokens < first.usage.cache_creation_input_tokens


def test_more_than_four_breakpoints_is_rejected(fake_api: FakeMessagesAPI) -> None:
    marked = {"type": "ephemeral"}
    tools = [{**tool, "name": f"t{i}", "cache_control": marked} for i, tool in enumerate(TOOLS * 2)]
    system = [{"type": "text", "text": "rules", "cache_control": marked}]
    c = client(fake_api)
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4"):
        c.messages.create(model="m", max_tokens=5, tools=tools, system=system,  # type: ignore[arg-type]
                          messages=[{"role": "user", "content": "hi"}])
    assert c.messages.create(model="m", max_tokens=5, tools=tools, messages=[{"role": "user", "content": "hi"}])  # type: ignore[arg-type]


def test_billed_cost_uses_each_requests_model_and_usage(fake_api: FakeMessagesAPI) -> None:
    usage = {"input_tokens": 1000, "output_tokens": 500, "cache_creation_input_tokens": 2000,
             "cache_read_input_tokens": 4000}
    fake_api.default(lambda body: Reply([text("ok")], usage=usage))
    fake_api.script("fails", [Fault(500)])
    c = client(fake_api)
    for model in ("big", "small"):
        c.messages.create(model=model, max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(anthropic.InternalServerError):
        send(c, conversation("fails", 0))
    prices = {"big": Price(input=3, output=15, cache_write=3.75, cache_read=0.3),
              "small": Price(input=1, output=5, cache_write=1.25, cache_read=0.1)}
    assert fake_api.billed() == {"requests": 2, "input_tokens": 2000, "output_tokens": 1000,
                                 "cache_creation_input_tokens": 4000, "cache_read_input_tokens": 8000}
    big = (1000 * 3 + 500 * 15 + 2000 * 3.75 + 4000 * 0.3) / 1e6
    assert fake_api.billed_cost(prices) == pytest.approx(big + big / 3)
    with pytest.raises(KeyError, match="small"):
        fake_api.billed_cost({"big": prices["big"]})


@pytest.fixture
def leaky_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "must-not-be-sent")
    monkeypatch.setenv("ANTHROPIC_PROFILE", "someone")
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "x-leak: yes")


def test_sdk_env_points_the_sdk_at_the_fake(
    leaky_environment: None, sdk_env: dict[str, str], fake_api: FakeMessagesAPI
) -> None:
    assert sdk_env["ANTHROPIC_BASE_URL"] == fake_api.url and "PATH" in sdk_env
    assert "ANTHROPIC_AUTH_TOKEN" not in sdk_env and "ANTHROPIC_PROFILE" not in sdk_env
    sdk = anthropic.Anthropic(max_retries=0)  # everything from the environment
    sdk.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    headers = fake_api.requests[0].headers
    assert headers["authorization"] == "Bearer test-key-not-secret" and "x-leak" not in headers


def test_sdk_env_without_key_never_finds_a_credential(sdk_env_without_key: dict[str, str]) -> None:
    assert "ANTHROPIC_API_KEY" not in sdk_env_without_key
    with pytest.raises(anthropic.AnthropicError):
        anthropic.Anthropic(max_retries=0)


# --- the Models API and thinking (DESIGN.md section 8) ------------------------------------------------


def thinking_turn(fake: FakeMessagesAPI, c: anthropic.Anthropic, model: str) -> tuple[list[dict[str, Any]], Any]:
    fake.script("think about a.py", [Reply([thinking("Let me look at line 3."), redacted_thinking(),
                                            tool_use("file_read", {"file_path": "a.py"})]), task_done()])
    opening = [{"role": "user", "content": "Please think about a.py"}]
    first = c.messages.create(model=model, max_tokens=2048, messages=opening, tools=TOOLS,  # type: ignore[arg-type]
                              thinking={"type": "adaptive"})
    return opening, first


def answered(opening: list[dict[str, Any]], assistant: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    return [*opening, {"role": "assistant", "content": assistant},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "1|x"}]}]


def test_thinking_blocks_are_signed_and_must_come_back_unchanged(fake_api: FakeMessagesAPI) -> None:
    fake_api.models.register("claude-thinker")
    c = client(fake_api)
    opening, first = thinking_turn(fake_api, c, "claude-thinker")
    kinds = [b.type for b in first.content]
    assert kinds == ["thinking", "redacted_thinking", "tool_use"] and first.content[0].signature
    blocks = [b.model_dump(exclude_none=True) for b in first.content]
    call_id = first.content[2].id
    ok = c.messages.create(model="claude-thinker", max_tokens=2048, tools=TOOLS,  # type: ignore[arg-type]
                           messages=answered(opening, blocks, call_id), thinking={"type": "adaptive"})
    assert ok.stop_reason == "tool_use"
    altered = [{**blocks[0], "thinking": "Something else."}, *blocks[1:]]
    for assistant in (blocks[2:], blocks[1:], altered):  # thinking dropped, one of two dropped, text altered
        with pytest.raises(anthropic.BadRequestError):
            c.messages.create(model="claude-thinker", max_tokens=2048, tools=TOOLS,  # type: ignore[arg-type]
                              messages=answered(opening, assistant, call_id), thinking={"type": "adaptive"})


def test_without_thinking_no_thinking_blocks_and_no_checks(fake_api: FakeMessagesAPI) -> None:
    c = client(fake_api)
    fake_api.script("think about a.py", [Reply([thinking("hm"), tool_use("file_read", {"file_path": "a.py"})])])
    opening = [{"role": "user", "content": "Please think about a.py"}]
    first = send(c, opening)
    assert [b.type for b in first.content] == ["tool_use"]
    assert send(c, answered(opening, [first.content[0].model_dump()], first.content[0].id)).stop_reason


def test_current_models_reject_sampling_and_unsupported_settings(fake_api: FakeMessagesAPI) -> None:
    fake_api.models.register("claude-thinker", efforts=("low", "medium", "high"))
    fake_api.models.register("claude-plain", adaptive=False, efforts=())
    c = client(fake_api)
    hi = [{"role": "user", "content": "hi"}]
    bad: list[tuple[str, dict[str, Any]]] = [
        # SDK 2.15 no longer has sampling parameters at all; a caller could still send them as extra body.
        ("claude-thinker", {"extra_body": {"temperature": 0.2}}), ("claude-thinker", {"extra_body": {"top_p": 0.9}}),
        ("claude-thinker", {"output_config": {"effort": "max"}}),
        ("claude-thinker", {"thinking": {"type": "adaptive"}, "tool_choice": {"type": "any"}}),
        ("claude-plain", {"thinking": {"type": "adaptive"}}),
        ("claude-plain", {"output_config": {"effort": "low"}}),
    ]
    for model, extra in bad:
        with pytest.raises(anthropic.BadRequestError):
            c.messages.create(model=model, max_tokens=64, messages=hi, tools=TOOLS, **extra)  # type: ignore[arg-type]
    assert send(c, hi, extra_body={"temperature": 0.2}).stop_reason  # an unregistered (compatible) model takes it
    ok = c.messages.create(model="claude-thinker", max_tokens=64, messages=hi,  # type: ignore[arg-type]
                           output_config={"effort": "high"}, thinking={"type": "adaptive"})
    assert ok.stop_reason
    assert [r.status for r in fake_api.requests] == [400] * len(bad) + [200, 200]


def test_strict_tools_are_refused_as_the_api_refuses_them(fake_api: FakeMessagesAPI) -> None:
    """check_verdict's schema as the checks pass sends it is accepted; an open object or an empty enum (a pass
    with no check to answer) is a 400, as strict tool use answers it."""
    from ocr_hook.agent.checks_pass import check_tools

    c = client(fake_api)
    opening = [{"role": "user", "content": "x"}]
    tools = check_tools(["endpoint-test"])
    assert c.messages.create(model="claude-test", max_tokens=64, messages=opening, tools=tools).id  # type: ignore[arg-type]
    with pytest.raises(anthropic.BadRequestError, match="enum: must be a non-empty list"):
        c.messages.create(model="claude-test", max_tokens=64, messages=opening, tools=check_tools([]))  # type: ignore[arg-type]
    open_object = {**tools[0], "input_schema": {"type": "object", "properties": {}}}
    with pytest.raises(anthropic.BadRequestError, match="additionalProperties"):
        c.messages.create(model="claude-test", max_tokens=64, messages=opening, tools=[open_object])  # type: ignore[arg-type]
