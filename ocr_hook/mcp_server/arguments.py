"""Tool arguments → what the commands take, with defaults filled in here and errors that say how to call.

The JSON schemas in tools.py are checked with jsonschema (the client may not have); the rules a schema
cannot say well (which ref goes with which scope) are checked after it, by the same function the
command line uses (ocr_hook.changes.scope.choose_scope); the messages here add how to call correctly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ocr_hook.changes.scope import (
    SCAN,
    SCOPE_REFS,
    Scope,
    ScopeConflict,
    ScopeIncomplete,
    choose_scope,
    scan_scope,
)
from ocr_hook.mcp_server import tools

_REF_ARGS = ("base", "from", "to", "commit")
_REF_OF_ARG = {"base": "base", "from": "from_ref", "to": "to_ref", "commit": "commit"}  # argument -> Scope field
_EXAMPLES = {
    "staged": {"scope": "staged"},
    "base": {"scope": "base", "base": "main"},
    "range": {"scope": "range", "from": "v1.0", "to": "HEAD"},
    "commit": {"scope": "commit", "commit": "HEAD"},
    SCAN: {"scope": SCAN, "rev": "HEAD", "paths": ["src/"]},
}


class ArgumentError(ValueError):
    """The call's arguments are wrong; str(exc) says what and how to call correctly (one line)."""


@dataclass(frozen=True)
class ReviewCall:
    scope: Scope
    paths: tuple[str, ...]
    fail_on: str | None = None  # None: the configured one
    max_cost: float | None = None  # None: the configured one; else at most the configured one
    timeout: float | None = None
    effort: str | None = None  # None: the configured one
    intent: str | None = None  # what the change is for, as the calling agent says (DESIGN.md 12)


def _schema_error(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    from jsonschema import Draft202012Validator

    errors = sorted(Draft202012Validator(schema).iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    error = errors[0]
    where = ".".join(str(p) for p in error.absolute_path)
    allowed = ", ".join(schema["properties"])
    if error.validator == "additionalProperties":
        unknown = sorted(set(arguments) - set(schema["properties"]))
        return f"unknown argument {', '.join(map(repr, unknown))} for {tool}; it takes: {allowed}"
    if error.validator == "enum":
        choices = ", ".join(map(str, error.validator_value))
        return f"argument '{where}' must be one of {choices}; got {json.dumps(error.instance)}"
    if error.validator == "type":
        return f"argument '{where}' must be of type {error.validator_value}; got {json.dumps(error.instance)}"
    if error.validator == "exclusiveMinimum":
        return f"argument '{where}' must be greater than {error.validator_value}; got {json.dumps(error.instance)}"
    return f"argument '{where or '(all)'}': {error.message}"


def _scope(tool: str, args: Mapping[str, Any]) -> Scope:
    given = [name for name in _REF_ARGS if name in args]
    scope = args.get("scope")
    if scope == SCAN or "rev" in args:
        if scope != SCAN or given:
            extra = given if scope == SCAN else ["rev"]
            raise ArgumentError(f"{tool}: {', '.join(map(repr, extra))} do not go with scope "
                                f"'{scope or 'staged'}'; call it like {json.dumps(_EXAMPLES[SCAN])}")
        return scan_scope(args.get("rev"))
    try:
        return choose_scope(() if scope is None else (scope,), base=args.get("base"), from_ref=args.get("from"),
                            to_ref=args.get("to"), commit=args.get("commit"))
    except ScopeConflict:
        if scope is None:
            raise ArgumentError(f"{tool}: {' and '.join(given)} belong to different scopes; pick one scope, e.g. "
                                f"{json.dumps(_EXAMPLES['base'])} or {json.dumps(_EXAMPLES['range'])}") from None
        extra = [name for name in given if _REF_OF_ARG[name] not in SCOPE_REFS[scope]]
        raise ArgumentError(f"{tool}: {', '.join(map(repr, extra))} do not go with scope '{scope}'; drop "
                            f"them, or choose the scope they belong to (e.g. {json.dumps(_EXAMPLES['base'])})"
                            ) from None
    except ScopeIncomplete as exc:
        missing = [name for name in _REF_ARGS if _REF_OF_ARG[name] in exc.missing]
        raise ArgumentError(f"{tool}: scope '{exc.kind}' needs {' and '.join(map(repr, missing))}; "
                            f"call it like {json.dumps(_EXAMPLES[exc.kind])}") from None


def _checked(tool: str, schema: Mapping[str, Any], arguments: Any) -> Mapping[str, Any]:
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise ArgumentError(f"{tool}: arguments must be a JSON object, e.g. {json.dumps(_EXAMPLES['staged'])}")
    problem = _schema_error(tool, schema, arguments)
    if problem is not None:
        raise ArgumentError(problem)
    return arguments


def review_call(arguments: Any) -> ReviewCall:
    args = _checked(tools.REVIEW, tools.REVIEW_INPUT, arguments)
    return ReviewCall(scope=_scope(tools.REVIEW, args), paths=tuple(args.get("paths", ())),
                      fail_on=args.get("fail_on"), max_cost=args.get("max_cost"), timeout=args.get("timeout"),
                      effort=args.get("effort"), intent=args.get("intent"))


def preview_call(arguments: Any) -> tuple[Scope, tuple[str, ...], str | None]:
    """Scope, paths and effort (None: the configured one) of a preview call."""
    args = _checked(tools.PREVIEW, tools.PREVIEW_INPUT, arguments)
    return _scope(tools.PREVIEW, args), tuple(args.get("paths", ())), args.get("effort")


def delegate_start_call(arguments: Any) -> tuple[Scope, tuple[str, ...], str | None, str | None]:
    """Scope, paths, effort and intent of a delegate_start call."""
    args = _checked(tools.DELEGATE_START, tools.DELEGATE_START_INPUT, arguments)
    return (_scope(tools.DELEGATE_START, args), tuple(args.get("paths", ())), args.get("effort"),
            args.get("intent"))


def delegate_call_call(arguments: Any) -> tuple[str, str, str, Any]:
    """Session, file, tool and the tool's input of a delegate_call call."""
    args = _checked(tools.DELEGATE_CALL, tools.DELEGATE_CALL_INPUT, arguments)
    return args["session"], args["file"], args["tool"], args.get("input", {})


def delegate_finish_call(arguments: Any) -> tuple[str, str | None]:
    args = _checked(tools.DELEGATE_FINISH, tools.DELEGATE_FINISH_INPUT, arguments)
    return args["session"], args.get("fail_on")
