"""The capability lookup (ocr_hook.agent.capabilities) through the real SDK against the fake Models API."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import anthropic
import pytest
from fake_api import FakeMessagesAPI

from ocr_hook.agent.capabilities import (
    TTL_S,
    Capabilities,
    CapabilityLookup,
    from_model_info,
    read_record,
    record_path,
    remember,
    write_record,
)

MODEL = "claude-test-thinker"


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def sdk(url: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=url, api_key="x", max_retries=2)


def look_up(url: str, cache_dir: Path | None, clock: Clock, *models: str, provider: str = "anthropic",
            ) -> tuple[list[Capabilities], int]:
    async def go() -> tuple[list[Capabilities], int]:
        client = sdk(url)
        try:
            lookup = CapabilityLookup(client, provider, cache_dir, clock=clock)
            found = await asyncio.gather(*(lookup.get(m) for m in models))
            return list(found), lookup.requests
        finally:
            await client.close()

    return asyncio.run(go())


def test_capabilities_from_the_models_api(fake_api: FakeMessagesAPI, tmp_path: Path) -> None:
    fake_api.models.register(MODEL, adaptive=True, efforts=("low", "medium", "high"), max_input_tokens=150_000,
                             max_tokens=32_000)
    [caps], sent = look_up(fake_api.url, tmp_path, Clock(), MODEL)
    assert caps == Capabilities(True, True, frozenset({"low", "medium", "high"}), 150_000, 32_000)
    assert caps.supports_effort("high") and not caps.supports_effort("max")
    assert sent == 1 and [r.path for r in fake_api.models.requests] == [f"/v1/models/{MODEL}"]
    assert fake_api.requests == []  # the Messages API saw nothing


def test_the_sdk_reads_the_fakes_answer_as_a_model_info(fake_api: FakeMessagesAPI) -> None:
    fake_api.models.register(MODEL, adaptive=False, efforts=())
    info = anthropic.Anthropic(base_url=fake_api.url, api_key="x").models.retrieve(MODEL)
    assert isinstance(info, anthropic.types.ModelInfo)
    assert info.capabilities is not None and info.capabilities.thinking.types.adaptive.supported is False
    assert info.capabilities.effort.supported is False and info.capabilities.effort.high.supported is False
    assert from_model_info(info) == Capabilities(True, False, frozenset(), 200_000, 64_000)


def test_one_lookup_per_model_per_run_and_per_day(fake_api: FakeMessagesAPI, tmp_path: Path) -> None:
    fake_api.models.register(MODEL)
    clock = Clock()
    found, sent = look_up(fake_api.url, tmp_path, clock, MODEL, MODEL, MODEL)  # three files at once
    assert sent == 1 and len(fake_api.models.requests) == 1
    assert all(c.adaptive_thinking for c in found)
    clock.now += TTL_S - 60  # the next run the same day: from the record, no request
    [caps], sent = look_up(fake_api.url, tmp_path, clock, MODEL)
    assert sent == 0 and len(fake_api.models.requests) == 1 and caps.adaptive_thinking
    clock.now += 120  # a day later: asked again
    _, sent = look_up(fake_api.url, tmp_path, clock, MODEL)
    assert sent == 1 and len(fake_api.models.requests) == 2


def test_a_404_is_unknown_and_remembered(fake_api: FakeMessagesAPI, tmp_path: Path) -> None:
    clock = Clock()
    [caps], _ = look_up(fake_api.url, tmp_path, clock, "some-local-model")
    assert caps == Capabilities.unknown() and not caps.known and not caps.supports_effort("low")
    [again], sent = look_up(fake_api.url, tmp_path, clock, "some-local-model")
    assert again == caps and sent == 0
    assert [r.path for r in fake_api.models.requests] == ["/v1/models/some-local-model"]  # no SDK retries either


def test_no_answer_is_unknown_and_asked_again_next_run(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on: connection refused
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    [caps], sent = look_up(url, tmp_path, Clock(), MODEL)
    assert caps == Capabilities.unknown() and sent == 1
    assert not record_path(tmp_path, "anthropic", url, MODEL).exists()


def test_bedrock_and_vertex_are_never_asked(fake_api: FakeMessagesAPI, tmp_path: Path) -> None:
    fake_api.models.register(MODEL)
    for provider in ("bedrock", "vertex"):
        [caps], sent = look_up(fake_api.url, tmp_path, Clock(), MODEL, provider=provider)
        assert caps == Capabilities.unknown() and sent == 0
    assert fake_api.models.requests == []


def test_keyed_by_provider_base_url_and_model(fake_api: FakeMessagesAPI, tmp_path: Path) -> None:
    fake_api.models.register(MODEL)
    fake_api.models.register("other-model", adaptive=False, efforts=("low",))
    clock = Clock()
    look_up(fake_api.url, tmp_path, clock, MODEL, "other-model")
    assert len(fake_api.models.requests) == 2
    paths = {record_path(tmp_path, "anthropic", fake_api.url, m) for m in (MODEL, "other-model")}
    paths.add(record_path(tmp_path, "anthropic", "http://elsewhere.example", MODEL))
    assert len(paths) == 3
    with FakeMessagesAPI() as second:  # another base URL: its own record
        second.models.register(MODEL, efforts=("high",))
        [caps], sent = look_up(second.url, tmp_path, clock, MODEL)
        assert sent == 1 and caps.effort_levels == frozenset({"high"})


@pytest.mark.parametrize("junk", [b"", b"{not json", b"[]", b'{"format": 1}', b"\xff\xfe",
                                  b'{"format": 1, "capabilities": {"known": "yes"}}'])
def test_a_corrupt_record_is_a_miss(fake_api: FakeMessagesAPI, tmp_path: Path, junk: bytes) -> None:
    fake_api.models.register(MODEL)
    clock = Clock()
    look_up(fake_api.url, tmp_path, clock, MODEL)
    path = record_path(tmp_path, "anthropic", fake_api.url, MODEL)
    path.write_bytes(junk)
    [caps], sent = look_up(fake_api.url, tmp_path, clock, MODEL)
    assert sent == 1 and caps.adaptive_thinking
    assert json.loads(path.read_text())["capabilities"]["adaptive_thinking"] is True  # rewritten whole


def test_record_writes_are_atomic_and_leave_no_temporary_files(fake_api: FakeMessagesAPI, tmp_path: Path) -> None:
    fake_api.models.register(MODEL)
    look_up(fake_api.url, tmp_path, Clock(), MODEL)
    files = sorted(p.name for p in (tmp_path / "capabilities").iterdir())
    assert files == [record_path(tmp_path, "anthropic", fake_api.url, MODEL).name]


def test_an_unwritable_cache_dir_still_answers(fake_api: FakeMessagesAPI, tmp_path: Path) -> None:
    fake_api.models.register(MODEL)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    [caps], sent = look_up(fake_api.url, blocker, Clock(), MODEL)
    assert caps.known and sent == 1


def test_extra_keys_live_and_expire_with_the_record(tmp_path: Path) -> None:
    now = 1_800_000_000.0
    base: dict[str, Any] = {"fetched_at": now, "capabilities": Capabilities(True, True, frozenset({"low"})).to_json()}
    assert not remember(tmp_path, "anthropic", "http://h", "m", "rejected_fields", ["thinking"], now=now)
    assert write_record(tmp_path, "anthropic", "http://h", "m", base)
    assert remember(tmp_path, "anthropic", "http://h", "m", "rejected_fields", ["thinking"], now=now)
    record = read_record(tmp_path, "anthropic", "http://h/", "m", now=now + 1)  # a trailing slash is the same URL
    assert record is not None and record["rejected_fields"] == ["thinking"]
    assert Capabilities.from_json(record["capabilities"]).effort_levels == frozenset({"low"})
    assert read_record(tmp_path, "anthropic", "http://h", "m", now=now + TTL_S) is None
    with pytest.raises(ValueError):
        remember(tmp_path, "anthropic", "http://h", "m", "capabilities", {}, now=now)


def test_a_slow_models_api_is_cut_off_by_the_runs_time_left(fake_api: FakeMessagesAPI, tmp_path: Path) -> None:
    """A lookup is not retried and never outlasts the run: with no time left nothing is asked at all, and
    a server that does not answer within the time left gives unknown capabilities."""
    fake_api.models.register(MODEL)

    async def go(remaining: float) -> tuple[Capabilities, int]:
        client = sdk(fake_api.url)
        try:
            lookup = CapabilityLookup(client, "anthropic", tmp_path, clock=Clock(), remaining_s=lambda: remaining)
            return await lookup.get(MODEL), lookup.requests
        finally:
            await client.close()

    assert asyncio.run(go(0.0)) == (Capabilities.unknown(), 0)
    fake_api.latency_s = 5.0  # every answer 5 s late
    caps, sent = asyncio.run(go(0.3))
    assert caps == Capabilities.unknown() and sent == 1
    assert not record_path(tmp_path, "anthropic", fake_api.url, MODEL).exists()  # a timeout is not remembered
