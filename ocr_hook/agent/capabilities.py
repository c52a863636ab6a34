"""What a model accepts, from the Models API (`GET /v1/models/{id}`), remembered for a day.

DESIGN.md section 8: adaptive thinking and `output_config.effort` are sent only where the Models API
says the model takes them. Anything else — a compatible server without the Models API (404), Bedrock,
Vertex, a refused connection, an answer of another shape — gives `Capabilities.unknown()`, and then
neither is sent.

The answer is kept as one small JSON record per provider, base URL and model under
`<cache_dir>/capabilities/`, so a hook run pays for the lookup at most once a day. Writes are atomic
(a temporary file renamed into place); an unreadable, corrupt or stale record is a miss. A record may
carry keys of its own besides `capabilities` (e.g. the fields a server rejected, see `remember`):
they live and expire with it.

Within one run `CapabilityLookup` asks at most once per model, however many files wait for it.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocr_hook.digest import sha256_hex

FORMAT_VERSION = 1
TTL_S = 24 * 3600.0
SUBDIR = "capabilities"
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
# The lookup is on the first request's critical path (once a day): it must not hold a hook up.
LOOKUP_TIMEOUT_S = 10.0
_MAX_RECORD_BYTES = 256 * 1024
# Providers whose SDK clients have no Models API of this shape: nothing is asked.
_NO_MODELS_API = ("bedrock", "vertex")


@dataclass(frozen=True)
class Capabilities:
    """What one model accepts. `known` is False when nobody could tell: then nothing optional is sent."""

    known: bool = False
    adaptive_thinking: bool = False
    effort_levels: frozenset[str] = field(default_factory=frozenset)
    max_input_tokens: int | None = None
    max_tokens: int | None = None

    @classmethod
    def unknown(cls) -> Capabilities:
        return cls()

    def supports_effort(self, level: str) -> bool:
        return self.known and level in self.effort_levels

    def to_json(self) -> dict[str, Any]:
        return {"known": self.known, "adaptive_thinking": self.adaptive_thinking,
                "effort_levels": sorted(self.effort_levels), "max_input_tokens": self.max_input_tokens,
                "max_tokens": self.max_tokens}

    @classmethod
    def from_json(cls, data: Any) -> Capabilities:
        """The inverse of to_json; ValueError on anything of another shape."""
        if not isinstance(data, Mapping):
            raise ValueError("capabilities must be an object")
        known, adaptive, levels = data.get("known"), data.get("adaptive_thinking"), data.get("effort_levels")
        if not isinstance(known, bool) or not isinstance(adaptive, bool):
            raise ValueError("known and adaptive_thinking must be booleans")
        if not isinstance(levels, list) or not all(isinstance(x, str) for x in levels):
            raise ValueError("effort_levels must be a list of strings")
        return cls(known, adaptive, frozenset(levels), _count(data.get("max_input_tokens")),
                   _count(data.get("max_tokens")))


def _count(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if value is None:
        return None
    raise ValueError("token limits must be positive whole numbers or null")


def _supported(obj: Any, *names: str) -> bool:
    """`obj.<names…>.supported is True`, read defensively: a compatible server may send any shape."""
    for name in names:
        obj = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
        if obj is None:
            return False
    value = obj.get("supported") if isinstance(obj, Mapping) else getattr(obj, "supported", None)
    return value is True


def from_model_info(info: Any) -> Capabilities:
    """Capabilities from an SDK ModelInfo (or the same shape as a mapping)."""

    def get(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)

    caps = get(info, "capabilities")
    adaptive = caps is not None and _supported(caps, "thinking") and _supported(caps, "thinking", "types",
                                                                                 "adaptive")
    levels: frozenset[str] = frozenset()
    if caps is not None and _supported(caps, "effort"):
        levels = frozenset(level for level in EFFORT_LEVELS if _supported(caps, "effort", level))

    def limit(name: str) -> int | None:
        value = get(info, name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    return Capabilities(True, adaptive, levels, limit("max_input_tokens"), limit("max_tokens"))


# --- the record on disk ------------------------------------------------------------------------------


def record_path(cache_dir: Path, provider: str, base_url: str, model: str) -> Path:
    key = json.dumps([provider, base_url.rstrip("/"), model], ensure_ascii=True)
    return Path(cache_dir) / SUBDIR / (sha256_hex(key.encode("ascii")) + ".json")


def read_record(cache_dir: Path, provider: str, base_url: str, model: str, *,
                now: float | None = None) -> dict[str, Any] | None:
    """The fresh record for this provider, base URL and model, or None (absent, corrupt, stale, or of
    another format or key: a miss, never an error)."""
    from ocr_hook.bounded_read import Refused, linked_component, read_regular_file

    path = record_path(cache_dir, provider, base_url, model)
    now = time.time() if now is None else now
    try:
        if linked_component(cache_dir, path.parent) is not None:  # never read outside the cache
            return None
        raw = read_regular_file(path, _MAX_RECORD_BYTES)  # a FIFO or a link here is a miss, never a hang
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict) or data.get("format") != FORMAT_VERSION:
            return None
        if (data.get("provider"), data.get("base_url"), data.get("model")) != (provider, base_url.rstrip("/"), model):
            return None
        fetched = data.get("fetched_at")
        if isinstance(fetched, bool) or not isinstance(fetched, int | float) or not 0 <= now - fetched < TTL_S:
            return None
        Capabilities.from_json(data.get("capabilities"))  # a record whose core is unreadable is a miss
        return data
    except (OSError, ValueError, TypeError, RecursionError, OverflowError, Refused):  # Overflow: 10**400 - now
        return None


def write_record(cache_dir: Path, provider: str, base_url: str, model: str, record: Mapping[str, Any]) -> bool:
    """Store `record` (with its identity and format added) atomically; False when it could not be written
    (the lookup then simply happens again next run)."""
    path = record_path(cache_dir, provider, base_url, model)
    document = {**record, "format": FORMAT_VERSION, "provider": provider, "base_url": base_url.rstrip("/"),
                "model": model}
    payload = json.dumps(document, ensure_ascii=True, sort_keys=True).encode("ascii")
    temp: str | None = None
    from ocr_hook.bounded_read import linked_component

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if linked_component(cache_dir, path.parent) is not None:  # never written through a link
            return False
        import tempfile  # only when writing, i.e. once a day

        fd, temp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(temp, path)
        temp = None
        return True
    except OSError:
        return False
    finally:
        if temp is not None:
            try:
                os.unlink(temp)
            except OSError:
                pass


def remember(cache_dir: Path, provider: str, base_url: str, model: str, key: str, value: Any, *,
             now: float | None = None) -> bool:
    """Add `key: value` to the fresh record of this model (e.g. the fields a server rejected). Without a
    fresh record there is nothing to add to: False. The key expires with the capabilities."""
    if key in ("format", "provider", "base_url", "model", "fetched_at", "capabilities"):
        raise ValueError(f"{key!r} is part of the record itself")
    record = read_record(cache_dir, provider, base_url, model, now=now)
    if record is None:
        return False
    return write_record(cache_dir, provider, base_url, model, {**record, key: value})


# --- asking the API ------------------------------------------------------------------------------------


async def fetch(client: Any, model: str, timeout_s: float = LOOKUP_TIMEOUT_S) -> tuple[Capabilities, bool]:
    """Ask the Models API once, without retries. Returns the capabilities and whether the answer is
    worth keeping for a day: a definite answer (the model info, or a 4xx such as a compatible server's
    404) is; a refused connection, a timeout or a 5xx is not (the next run asks again)."""
    import anthropic

    try:
        info = await client.with_options(max_retries=0, timeout=timeout_s).models.retrieve(model)
    except anthropic.APIStatusError as exc:
        return Capabilities.unknown(), 400 <= exc.status_code < 500 and exc.status_code not in (408, 429)
    except (anthropic.AnthropicError, TypeError, ValueError, AttributeError):
        return Capabilities.unknown(), False
    try:
        return from_model_info(info), True
    except (TypeError, ValueError, AttributeError):  # a 200 of some other shape
        return Capabilities.unknown(), True


class CapabilityLookup:
    """Capabilities per model for one run: from the day's record, else one Models API request per model
    (concurrent callers share it), else unknown."""

    def __init__(self, client: Any, provider: str, cache_dir: Path | None, *,
                 clock: Callable[[], float] = time.time, timeout_s: float = LOOKUP_TIMEOUT_S,
                 remaining_s: Callable[[], float] | None = None) -> None:
        self._client = client
        self._provider = provider
        self._cache_dir = cache_dir
        self._clock = clock
        self._timeout_s = timeout_s
        self._remaining_s = remaining_s  # the run's time left: the lookup never outlasts the run
        self._pending: dict[str, asyncio.Future[Capabilities]] = {}
        self.requests = 0  # Models API requests this run sent

    @property
    def base_url(self) -> str:
        return str(getattr(self._client, "base_url", "") or "")

    async def get(self, model: str) -> Capabilities:
        future = self._pending.get(model)
        if future is None:
            future = asyncio.ensure_future(self._lookup(model))
            self._pending[model] = future
        return await asyncio.shield(future)

    async def _lookup(self, model: str) -> Capabilities:
        if self._provider in _NO_MODELS_API or self._client is None:
            return Capabilities.unknown()
        base_url = self.base_url
        if self._cache_dir is not None:
            record = read_record(self._cache_dir, self._provider, base_url, model, now=self._clock())
            if record is not None:
                return Capabilities.from_json(record["capabilities"])
        timeout = self._timeout_s if self._remaining_s is None else min(self._timeout_s, self._remaining_s())
        if timeout <= 0:
            return Capabilities.unknown()
        self.requests += 1
        capabilities, keep = await fetch(self._client, model, timeout)
        if keep and self._cache_dir is not None:
            write_record(self._cache_dir, self._provider, base_url, model,
                         {"fetched_at": self._clock(), "capabilities": capabilities.to_json()})
        return capabilities
