"""The Messages API, as the agent uses it: a lazily built SDK client behind the run's budget and deadline.

`anthropic` is imported only in `open_api`, i.e. only once there is something to send (with the collector
paused and its objects frozen: ocr_hook.gc_freeze).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ocr_hook.agent import compat
from ocr_hook.budget.tokens import estimate_tokens
from ocr_hook.errors import ConfigError, NoReviewer
from ocr_hook.settings import Settings

if TYPE_CHECKING:
    from ocr_hook.budget.ledger import Budget

# The SDK's own retry policy (408/409/429/5xx with retry-after) stays in charge; the run's deadline
# bounds it from outside because the SDK honours any retry-after without a cap.
MAX_RETRIES = 2
# Per attempt; the run deadline usually cuts in first.
REQUEST_TIMEOUT_S = 300.0
_REASON_CHARS = 240


class BudgetStop(Exception):
    """No request was sent (or it was cut off) because the cost, token or time budget ran out."""


class RequestFailed(Exception):
    """The request produced no usable response; str(exc) is a one-line reason without secrets."""


class PromptCut(RequestFailed):
    """The server reported far fewer input tokens than were sent: it cut the prompt (compat.prompt_cut)."""


class UnreadableResponse(Exception):
    """A success status whose body is not a Messages API message (an HTML page from a proxy, a JSON
    object of another shape): the SDK hands such bodies over unchecked."""


def _check_message(response: Any) -> None:
    """Raise UnreadableResponse unless `response` has what the loop reads: typed content blocks
    (tool_use ones with an id and a name) and token counts."""
    content = getattr(response, "content", None)
    usage = getattr(response, "usage", None)
    if not isinstance(content, list) or not isinstance(getattr(usage, "input_tokens", None), int):
        raise UnreadableResponse
    for block in content:
        kind = getattr(block, "type", None)
        if not isinstance(kind, str):
            raise UnreadableResponse
        if kind == "tool_use" and not (isinstance(getattr(block, "id", None), str)
                                       and isinstance(getattr(block, "name", None), str)
                                       and hasattr(block, "input")):
            raise UnreadableResponse
        if kind == "text" and not isinstance(getattr(block, "text", None), str):
            raise UnreadableResponse


def check_credentials(settings: Settings, environ: Mapping[str, str]) -> None:
    """Fail early, naming the variable to set, instead of the SDK's TypeError on the first request."""
    if settings.provider == "claude-code":  # Claude Code's own credentials, no API key needed
        from ocr_hook.agent.claude_code import check_credentials as check_claude_code

        check_claude_code(settings.claude_code_path, environ)
        return
    if settings.provider == "bedrock":
        if not (environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")):
            raise ConfigError("provider bedrock needs an AWS region: set AWS_REGION (or AWS_DEFAULT_REGION)")
        if not environ.get("AWS_BEARER_TOKEN_BEDROCK") and importlib.util.find_spec("boto3") is None:
            raise ConfigError("provider bedrock needs credentials: set AWS_BEARER_TOKEN_BEDROCK, "
                              "or install boto3 and configure AWS credentials")
        return
    if settings.provider == "vertex":
        if not environ.get("CLOUD_ML_REGION"):
            raise ConfigError("provider vertex needs a region: set CLOUD_ML_REGION")
        if not environ.get("ANTHROPIC_VERTEX_PROJECT_ID"):
            raise ConfigError("provider vertex needs a project: set ANTHROPIC_VERTEX_PROJECT_ID")
        if importlib.util.find_spec("google.auth") is None:
            raise ConfigError("provider vertex needs Google credentials: install google-auth "
                              "(`pip install 'anthropic[vertex]'`) and run `gcloud auth application-default login`")
        return
    if settings.provider == "auto":  # provider auto found neither a key nor Claude Code with a login
        from ocr_hook.hookenv.program import program

        raise NoReviewer("\n".join(ways_in(settings.provider_choice, program(environ))))
    from ocr_hook.provider_auto import api_key_variable

    if api_key_variable(environ):
        return
    raise ConfigError("no API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the environment")


def ways_in(why: str, program: str = "ocr-hook") -> list[str]:
    """The three ways to a review, for a run that found none of them (DESIGN.md 19): a short block of lines.
    `program`: how the user's shell runs ocr-hook (hookenv.program), for the delegate command."""
    from ocr_hook.provider_auto import NO_EXTRA

    if NO_EXTRA in why:  # signed in already: only the extra is missing, and this installation's command adds it
        from ocr_hook.install_command import add_extra_hint

        plan = ("  - a Claude plan (Pro, Max) through Claude Code, with the credential you have: "
                f"{add_extra_hint('claude-code')}")
    else:
        plan = ("  - a Claude plan (Pro, Max) through Claude Code: install ocr-hook's claude-code extra and sign in "
                "(`claude auth login`, or CLAUDE_CODE_OAUTH_TOKEN from `claude setup-token` in CI); see "
                "docs/claude-code.md")
    return [f"nothing to review with: {why or 'no API key and no Claude Code login'}. Three ways in:",
            "  - an API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)",
            plan,
            "  - delegate mode, your coding agent (Claude Code, Codex, Cursor, ...) as the reviewer, no key: "
            f"{program} delegate start; see docs/delegate.md"]


def _make_sdk_client(settings: Settings, environ: Mapping[str, str]) -> Any:
    from ocr_hook.gc_freeze import import_lasting

    anthropic = import_lasting("anthropic")  # its modules and classes last as long as the process: ~0.3 s less
    if settings.provider == "bedrock":
        return anthropic.AsyncAnthropicBedrock(max_retries=MAX_RETRIES)
    if settings.provider == "vertex":
        return anthropic.AsyncAnthropicVertex(max_retries=MAX_RETRIES)
    from ocr_hook.agent import tls

    # Credentials and endpoint come from the caller's environment mapping when it has them; with
    # None the SDK falls back to its own handling of os.environ (profiles, ANTHROPIC_BASE_URL, …).
    api_key = environ.get("ANTHROPIC_API_KEY") or None
    auth_token = None if api_key else (environ.get("ANTHROPIC_AUTH_TOKEN") or None)
    # The SDK's own HTTP client and defaults (timeouts, limits, proxies from the environment), with its
    # default TLS trust built once per process instead of once per client (ocr_hook.agent.tls).
    http_client = anthropic.DefaultAsyncHttpxClient(verify=tls.default_context())
    return anthropic.AsyncAnthropic(api_key=api_key, auth_token=auth_token, http_client=http_client,
                          base_url=environ.get("ANTHROPIC_BASE_URL") or None, max_retries=MAX_RETRIES)


def _one_line(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= _REASON_CHARS else line[: _REASON_CHARS - 1] + "…"


def describe_error(exc: BaseException, secrets: Sequence[str] = ()) -> str:
    """A one-line reason for an SDK exception, never a traceback and never a credential."""
    import anthropic

    if isinstance(exc, anthropic.APIStatusError):
        message = ""
        body = exc.body
        if isinstance(body, Mapping):
            error = body.get("error")
            if isinstance(error, Mapping):
                message = str(error.get("message") or error.get("type") or "")
        reason = f"API error {exc.status_code}" + (f": {message}" if message else "")
    elif isinstance(exc, anthropic.APITimeoutError):
        reason = "the API request timed out"
    elif isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__
        # Some causes (a reset connection) have no message; their type still says what happened.
        detail = (str(cause) or type(cause).__name__) if cause is not None else ""
        reason = "could not reach the API" + (f": {detail}" if detail else "")
    elif isinstance(exc, anthropic.APIResponseValidationError | UnreadableResponse):
        reason = "the API sent a response that could not be read"
    elif isinstance(exc, ValueError):  # the SDK decoding a body that is not JSON
        reason = f"the API sent a response that could not be read ({type(exc).__name__})"
    else:
        reason = f"request failed: {type(exc).__name__}: {exc}"
    for secret in secrets:
        if secret:
            reason = reason.replace(secret, "***")
    return _one_line(reason)


def _expire_soon(loop: asyncio.AbstractEventLoop, limit: asyncio.Timeout) -> None:
    """Make `limit` expire now; callable from any thread, harmless once it is over or the loop closed."""

    def expire() -> None:
        if limit.expired() or limit.when() is None:
            return
        try:
            limit.reschedule(loop.time())
        except RuntimeError:  # the timeout's block has already been left
            pass

    try:
        loop.call_soon_threadsafe(expire)
    except RuntimeError:  # the loop is closed: the request is long over
        pass


class Api:
    """Sends Messages API requests within the budget; one instance per run, shared by all files."""

    def __init__(self, client: Any, budget: Budget, secrets: Sequence[str] = (),
                 fields: compat.FieldPolicy | None = None) -> None:
        self._client = client
        self._budget = budget
        self._secrets = tuple(secrets)
        self.requests = 0
        # The optional fields a compatible server rejected: left out of later requests (compat.py).
        self.fields = fields if fields is not None else compat.FieldPolicy()
        self.first_reply_s: float | None = None  # how long the first answered request took
        self.estimated_input_tokens = 0  # our estimate of the input of the answered requests
        self._background: set[asyncio.Task[Any]] = set()

    @property
    def sdk_client(self) -> Any:
        """The SDK client, for the Models API lookup (ocr_hook.agent.capabilities)."""
        return self._client

    async def create(self, *, model: str, max_tokens: int, messages: list[dict[str, Any]],
                     system: list[dict[str, Any]] | str | None = None,
                     tools: list[dict[str, Any]] | None = None, optional: bool = False,
                     thinking: dict[str, Any] | None = None, output_config: dict[str, Any] | None = None,
                     counts: compat.PromptCounts | None = None) -> Any:
        """One request: reserve its worst case, send it under the deadline, settle what it cost.

        `thinking` and `output_config` are sent only when given (request_options decides, from the
        model's capabilities); max_tokens then already includes the room for thinking, so the
        reservation covers it. An `optional` request that does not fit raises BudgetStop without
        marking the budget exhausted: the review can go on without it. `counts`: the conversation this
        request is a turn of, for the second sign of a prompt cut (compat.PromptCounts)."""
        import anthropic

        payload: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": messages}
        if system:
            payload["system"] = system
        if tools:
            payload["tools"] = tools
        if thinking:
            payload["thinking"] = thinking
        if output_config:
            payload["output_config"] = output_config
        sent_text = json.dumps(payload, ensure_ascii=False, default=str)
        estimate = estimate_tokens(sent_text)
        reservation = self._budget.reserve(model, estimate, max_tokens, optional=optional)
        if reservation is None:
            raise BudgetStop(self._budget.exhausted_reason or "the budget cannot cover another request")
        remaining = self._budget.remaining_seconds()
        if remaining <= 0:
            self._budget.release(reservation)
            raise BudgetStop(self._budget.exhausted_reason or self._budget.time_limit_reached)
        self.requests += 1
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(remaining) as limit:
                # A budget stopped early (the run was cancelled) moves this deadline to now.
                unwatch = self._budget.on_stop(lambda: _expire_soon(loop, limit))
                try:
                    sent_at = loop.time()
                    response = await self._send(payload, max(1.0, min(REQUEST_TIMEOUT_S, remaining)))
                    if self.first_reply_s is None:
                        self.first_reply_s = loop.time() - sent_at
                finally:
                    unwatch()
        except TimeoutError:
            # Cut off by the deadline: the API may bill a request we stopped waiting for, so its
            # worst case counts as spent (the report says so) rather than nothing.
            self._budget.forfeit(reservation)
            raise BudgetStop(self._budget.exhausted_reason or self._budget.time_limit_reached) from None
        except (anthropic.AnthropicError, TypeError, ValueError) as exc:
            self._budget.release(reservation)
            raise RequestFailed(describe_error(exc, self._secrets)) from None
        except BaseException:
            self._budget.forfeit(reservation)  # cancelled (e.g. notes no longer needed) while in flight
            raise
        try:
            _check_message(response)
        except UnreadableResponse as exc:
            # Not a Messages API answer (no usage to settle with): nothing was billed for it.
            self._budget.release(reservation)
            raise RequestFailed(describe_error(exc, self._secrets)) from None
        self._budget.settle(reservation, response.usage)
        self.estimated_input_tokens += estimate
        judged = compat.judged_estimate(payload, sent_text)
        reported = compat.prompt_cut(judged, response.usage)
        if reported is not None:
            raise PromptCut(compat.prompt_cut_reason(judged, reported))
        stalled = counts.stalled(judged, response.usage) if counts is not None else None
        if stalled is not None:
            raise PromptCut(stalled)
        return response

    async def _send(self, payload: dict[str, Any], timeout: float) -> Any:
        """Send, leaving out the fields the server rejected; a 400 rejecting another optional field is
        sent once more without it (each retry drops a field the request carried: at most three)."""
        import anthropic

        sent = self.fields.prepare(payload)
        while True:
            try:
                return await self._client.messages.create(**sent, timeout=timeout)
            except anthropic.APIStatusError as exc:
                retry = self.fields.after_rejection(exc.status_code, exc.body, describe_error(exc, self._secrets),
                                                    sent)
                if retry is None:
                    raise
                sent = retry

    def keep_until_close(self, task: asyncio.Task[Any]) -> None:
        """Let a request nobody waits for any more finish while the run goes on: once sent it is
        probably billed anyway, and a finished request is counted at its real usage instead of its
        worst case. Whatever is still running at aclose() is cancelled then."""
        if not task.done():
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def aclose(self) -> None:
        leftovers = list(self._background)
        for task in leftovers:
            task.cancel()
        if leftovers:
            await asyncio.wait(leftovers)
            for task in leftovers:
                if not task.cancelled():
                    task.exception()  # retrieved: nobody needs the answer
        await self._client.close()


def secrets_of(environ: Mapping[str, str]) -> list[str]:
    """The credential values no message may ever show."""
    values = [environ.get(name, "") for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
                                                  "AWS_BEARER_TOKEN_BEDROCK")]
    return [value for value in values if value]


def client_for(settings: Settings, environ: Mapping[str, str]) -> Any:
    """The SDK client for the provider; its complaints (no region, no credentials, …) as a ConfigError."""
    try:
        return _make_sdk_client(settings, environ)
    except Exception as exc:
        reason = _one_line(f"{exc}")
        for secret in secrets_of(environ):
            reason = reason.replace(secret, "***")
        raise ConfigError(f"cannot set up the {settings.provider} API client: {reason}") from None


def open_api(settings: Settings, environ: Mapping[str, str], budget: Budget) -> Api:
    client = client_for(settings, environ)
    return Api(client, budget, secrets_of(environ), fields=_field_policy(settings, environ, client))


# The capability record's key for the fields a server rejected: {field: the server's answer}.
REJECTED_FIELDS_KEY = "rejected_fields"


def _field_policy(settings: Settings, environ: Mapping[str, str], client: Any) -> compat.FieldPolicy:
    """Rejected fields are kept with the model's capabilities (same cache directory, provider and base
    URL as the Models API lookup), so they expire with them."""
    from pathlib import Path

    from ocr_hook.agent import capabilities
    from ocr_hook.store.result_cache import run_cache_dir

    cache_dir = Path(run_cache_dir(settings.cache_dir, environ))
    provider, base_url = settings.provider, str(getattr(client, "base_url", "") or "")

    def load(model: str) -> dict[str, str]:
        record = capabilities.read_record(cache_dir, provider, base_url, model)
        found = record.get(REJECTED_FIELDS_KEY) if record is not None else None
        return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}

    def remember(model: str, field: str, reason: str) -> None:
        capabilities.remember(cache_dir, provider, base_url, model, REJECTED_FIELDS_KEY,
                              {**load(model), field: reason})

    return compat.FieldPolicy(load=load, remember=remember)
