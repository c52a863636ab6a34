"""The agent's side of `ocr-hook doctor` (DESIGN.md 10): what the endpoint says about each model, and
a probe review of a built-in sample through the normal loop.

The probe is an ordinary review: the real change model of a scratch git repository, the same tools,
prompts, secret mask, budget code and client (field drops included) as `ocr-hook review`, only with
caps small enough that it costs at most PROBE_MAX_COST and sends at most three requests (two loop
rounds and one re-location; no plan phase, no review filter).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocr_hook import effort
from ocr_hook.agent import capabilities
from ocr_hook.outcome import Usage
from ocr_hook.settings import Settings

NO_MODELS_API = ("bedrock", "vertex")  # as capabilities: nothing is asked
PROBE_MAX_COST = 0.05
PROBE_MAX_TOKENS = 60_000
PROBE_TIMEOUT_S = 120.0
PROBE_OUTPUT_TOKENS = 512  # per request: the sample needs a comment or two, and the cap must fit a request
PROBE_ROUNDS = 2  # a first round and the closing one; with re-location at most three requests
SAMPLE_PATH = "stats.py"
SAMPLE_BEFORE = '''def average(values):
    """The mean of a non-empty list of numbers."""
    return sum(values) / len(values)
'''
SAMPLE_AFTER = '''def average(values):
    """The mean of a non-empty list of numbers."""
    total = 0
    for value in values:
        total += value
    return total / (len(values) - 1)
'''


# --- endpoint and models ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelReport:
    model: str
    capabilities: capabilities.Capabilities
    answered: bool  # the Models API gave this model's info (now or in the day's record)
    from_record: bool = False  # read from the day's record in the cache directory, nothing asked
    status: int | None = None  # the HTTP status of a failed lookup
    error: str = ""  # a failed lookup, one line, no secrets
    shapeless: bool = False  # answered, but with no capabilities in the info (e.g. an OpenAI-style object)
    rejected_fields: Mapping[str, str] = field(default_factory=dict)  # remembered with the record


def base_url(settings: Settings, environ: Mapping[str, str]) -> str:
    """The endpoint the SDK would use, without building a client."""
    if settings.provider != "anthropic":
        return settings.provider
    return (environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com").rstrip("/")


def cache_dir_of(settings: Settings, environ: Mapping[str, str]) -> Path:
    from ocr_hook.store.result_cache import run_cache_dir

    return Path(run_cache_dir(settings.cache_dir, environ))


def check_models(settings: Settings, environ: Mapping[str, str], models: Sequence[str]) -> list[ModelReport]:
    """Each model's capabilities: from the day's record, else one Models API request (no retries),
    whose definite answer is kept as the review's own lookup would keep it. Needs credentials."""
    return asyncio.run(_check_models(settings, environ, models))


async def _check_models(settings: Settings, environ: Mapping[str, str], models: Sequence[str]) -> list[ModelReport]:
    from ocr_hook.agent.client import REJECTED_FIELDS_KEY, client_for, secrets_of

    if settings.provider in NO_MODELS_API:
        why = f"provider {settings.provider} has no Models API of this shape"
        return [ModelReport(m, capabilities.Capabilities.unknown(), False, error=why) for m in models]
    client = client_for(settings, environ)
    try:
        url = str(getattr(client, "base_url", "") or "")
        cache_dir = cache_dir_of(settings, environ)
        reports = []
        for model in models:
            report = await _one_model(client, settings.provider, url, cache_dir, model, secrets_of(environ))
            record = capabilities.read_record(cache_dir, settings.provider, url, model)
            rejected = record.get(REJECTED_FIELDS_KEY) if record is not None else None
            if isinstance(rejected, dict):
                report = dataclasses.replace(report, rejected_fields={str(k): str(v) for k, v in rejected.items()})
            reports.append(report)
        return reports
    finally:
        await client.close()


async def _one_model(client: Any, provider: str, url: str, cache_dir: Path, model: str,
                     secrets: Sequence[str]) -> ModelReport:
    import anthropic

    from ocr_hook.agent.client import describe_error

    unknown = capabilities.Capabilities.unknown()
    record = capabilities.read_record(cache_dir, provider, url, model)
    if record is not None:
        caps = capabilities.Capabilities.from_json(record["capabilities"])
        return ModelReport(model, caps, caps.known, from_record=True, shapeless=bool(record.get("shapeless")))
    try:
        info = await client.with_options(max_retries=0, timeout=capabilities.LOOKUP_TIMEOUT_S).models.retrieve(model)
    except anthropic.APIStatusError as exc:
        definite = 400 <= exc.status_code < 500 and exc.status_code not in (401, 403, 408, 429)
        if definite:  # as the review's lookup keeps it: capabilities unknown for a day
            capabilities.write_record(cache_dir, provider, url, model,
                                      {"fetched_at": time.time(), "capabilities": unknown.to_json()})
        return ModelReport(model, unknown, False, status=exc.status_code, error=describe_error(exc, secrets))
    except (anthropic.AnthropicError, TypeError, ValueError) as exc:
        return ModelReport(model, unknown, False, error=describe_error(exc, secrets))
    caps = capabilities.from_model_info(info)
    shapeless = getattr(info, "capabilities", None) is None
    capabilities.write_record(cache_dir, provider, url, model,
                              {"fetched_at": time.time(), "capabilities": caps.to_json(), "shapeless": shapeless})
    return ModelReport(model, caps, True, shapeless=shapeless)


# --- the probe -------------------------------------------------------------------------------------


@dataclass
class ProbeReport:
    state: str  # reviewed | failed | skipped (as a file of a review)
    reason: str  # why it failed or was skipped
    stopped_by: str  # as LoopOutcome.stopped_by
    tool_calls: int
    requests: int
    usage: Usage
    first_reply_s: float | None
    comments: int
    cap_usd: float
    estimated_input_tokens: int = 0  # what the client estimated the answered requests' input at
    notes: list[str] = field(default_factory=list)


def probe_settings(settings: Settings) -> Settings:
    """The run's settings with the probe's caps: two rounds, no plan phase, no review filter."""
    return settings._replace(max_rounds=PROBE_ROUNDS, plan_threshold=10**9, review_filter=False,
                               max_output_tokens=min(settings.max_output_tokens, PROBE_OUTPUT_TOKENS),
                               concurrency=1, cache=False)


def run_probe(settings: Settings, environ: Mapping[str, str]) -> ProbeReport:
    """Review the built-in sample. Raises ConfigError (no credentials, no price) before sending anything."""
    from ocr_hook.agent.client import check_credentials

    check_credentials(settings, environ)
    probe = probe_settings(settings)
    budget_price_check(probe)
    with tempfile.TemporaryDirectory(prefix="ocr-hook-probe-") as scratch:
        root = _sample_repo(Path(scratch))
        return asyncio.run(_probe(probe, environ, root))


def budget_price_check(settings: Settings) -> None:
    from ocr_hook.budget.ledger import Budget

    budget = Budget(max_cost_usd=0, max_tokens=0, deadline=0, pricing=settings.pricing)
    for task in ("main", "relocate"):
        budget.price(settings.model_for(task))


def _sample_repo(root: Path) -> str:
    """A scratch repository with the sample committed and its change staged, built with plain git
    commands and neither the user's identity nor their hooks."""
    from ocr_hook.changes.git import run_git

    quiet = ["-c", "user.name=ocr-hook doctor", "-c", "user.email=doctor@ocr-hook.invalid",
             "-c", "commit.gpgsign=false", "-c", f"core.hooksPath={os.devnull}"]
    run_git(str(root), ["init", "-q"])
    (root / SAMPLE_PATH).write_text(SAMPLE_BEFORE, encoding="utf-8")
    run_git(str(root), ["add", "--", SAMPLE_PATH])
    run_git(str(root), [*quiet, "commit", "-q", "--no-verify", "-m", "sample"])
    (root / SAMPLE_PATH).write_text(SAMPLE_AFTER, encoding="utf-8")
    run_git(str(root), ["add", "--", SAMPLE_PATH])
    return str(root)


async def _probe(settings: Settings, environ: Mapping[str, str], root: str) -> ProbeReport:
    from ocr_hook.agent.client import open_api
    from ocr_hook.agent.conversation import SecretMasker
    from ocr_hook.agent.loop import FileReview, FileTask
    from ocr_hook.agent.post_review import finish_file
    from ocr_hook.budget.ledger import Budget
    from ocr_hook.changes import collect_changes, open_snapshot
    from ocr_hook.changes.scope import Scope
    from ocr_hook.secrets_mask import mask_secrets

    cap = min(PROBE_MAX_COST, settings.max_cost)
    budget = Budget(max_cost_usd=cap, max_tokens=min(PROBE_MAX_TOKENS, settings.max_tokens),
                    deadline=time.monotonic() + min(PROBE_TIMEOUT_S, settings.timeout), pricing=settings.pricing)
    change_set = collect_changes(root, Scope("staged"), (), environ)
    snapshot = open_snapshot(root, change_set)
    # provider claude-code: the sample is reviewed through Claude Code, as a review would be; nothing bypasses it
    api = None if settings.provider == "claude-code" else open_api(settings, environ, budget)
    try:
        change = change_set.files[0]
        mask = SecretMasker(mask_secrets)
        # As under pre-commit: the quick profile, with what the model accepts from the capability lookup.
        quick = effort.profile("quick", "doctor --probe: as in a commit hook")
        lookup = None if api is None else capabilities.CapabilityLookup(
            api.sdk_client, settings.provider, cache_dir_of(settings, environ), remaining_s=budget.remaining_seconds)
        task = FileTask(change=change, change_set=change_set, snapshot=snapshot, settings=settings, budget=budget,
                        other_paths=(), profile=quick, capabilities=lookup)
        if api is None:
            from ocr_hook.agent.claude_code_review import ClaudeCodeReview

            outcome = await ClaudeCodeReview(task, mask, environ).run()
        else:
            outcome = await FileReview(task, api, mask).run()
        content = snapshot.read_text(change.path)
        post = await finish_file(outcome.comments, change, content, settings=settings, mask=mask,
                                 api=None if outcome.stopped_by in ("api", "internal") else api, profile=quick)
    finally:
        if api is not None:
            await api.aclose()
        snapshot.close()
    usage = budget.usage
    return ProbeReport(state=outcome.state, reason=outcome.reason, stopped_by=outcome.stopped_by,
                       tool_calls=outcome.tool_calls, requests=usage.requests, usage=usage,
                       first_reply_s=api.first_reply_s if api is not None else None, comments=len(post.findings),
                       cap_usd=cap, estimated_input_tokens=api.estimated_input_tokens if api is not None else 0,
                       notes=api.fields.notes() if api is not None else [])
