"""Every request a fake forge receives, and every reply it gives, checked against the forge's own API
description (DESIGN 17): the operations vendored in tests/api_descriptions/ by extract.py, plus the few a
description lacks, written down from the REST documentation in <forge>.extra.json, and the few places where
a description is wrong about what the forge does, corrected there (`corrections`, each with its reason).

`check(forge, method, path, query, body)` finds the operation by its path template and validates the path
and query parameters and the JSON body; `check_reply(...)` validates a reply against the response schema
for its status. Both return the problems as lines (empty: conforms). An operation no description has is a
problem, as is a query parameter the operation does not take, or a body field its schema does not name:
a description rarely closes its objects, and a misspelt field is exactly what a fake lets through.
Validators are compiled once per process.

GitHub's GraphQL API (DESIGN 18) is checked the same way against GitHub's published schema (github.graphql,
as the npm package @octokit/graphql-schema ships it; github.graphql.json records which): `check_graphql(body)`
parses and validates a POST /graphql body with graphql-core (unknown fields, arguments and types, wrong
nesting), refuses a deprecated field (GitHub removes them on a date) and checks the variables against the
types the operation declares.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import graphql
from jsonschema import Draft4Validator

HERE = Path(__file__).resolve().parent / "api_descriptions"


@dataclass
class Operation:
    method: str
    template: str
    pattern: re.Pattern[str]
    params: dict[tuple[str, str], dict[str, Any]]  # (in, name) → parameter
    body: Draft4Validator | None
    responses: dict[str, Draft4Validator | None]
    wrapped_lists: bool  # Azure: a described array arrives as {"count": n, "value": [...]}
    source: str
    validators: dict[str, Draft4Validator] = field(default_factory=dict)


def _flatten(node: dict[str, Any]) -> dict[str, Any]:
    """An allOf of objects (a description's inheritance: GitPullRequestStatus is a GitStatus) as one
    object, so that closing it keeps the inherited properties."""
    parts = node.get("allOf")
    if not isinstance(parts, list) or not all((isinstance(x, dict) and "properties" in x) or x == {}
                                              for x in (_flatten(p) for p in parts)):
        return node
    out = {k: v for k, v in node.items() if k != "allOf"}
    props, required = dict(out.get("properties", {})), list(out.get("required", []))
    for part in (_flatten(p) for p in parts):
        if part == {}:  # a cycle left open: the whole object stays open
            out["additionalProperties"] = True
        props.update(part.get("properties", {}))
        required += part.get("required", [])
    out["properties"], out["type"] = props, "object"
    if required:
        out["required"] = sorted(set(required))
    return out


def _openapi_to_jsonschema(node: Any, *, close: bool, flags: bool = False, partial: bool = False) -> Any:
    """OpenAPI's dialect as JSON Schema draft 4: nullable and x-nullable add null; allOf inheritance is
    one object; objects with named properties are closed when `close` (request bodies and replies alike).
    `flags`: Azure serialises a [Flags] enum as "edit, rename", so a string enum takes such a list.
    `partial`: a reply may leave out properties the description requires (a fake sends the fields the
    product reads, not GitHub's forty of a user); what it sends must still be named and typed, and a
    oneOf of such partial objects is then an anyOf."""
    if isinstance(node, list):
        return [_openapi_to_jsonschema(x, close=close, flags=flags, partial=partial) for x in node]
    if not isinstance(node, dict):
        return node
    node = _flatten(node)
    if node.get("format") == "T":  # Azure's generic Change<T>: the description cannot name T
        return {}
    if flags and isinstance(node.get("enum"), list) and all(isinstance(x, str) for x in node["enum"]):
        words = "|".join(re.escape(str(x)) for x in node["enum"])
        node = {**{k: v for k, v in node.items() if k != "enum"}, "pattern": rf"^({words})(, ({words}))*$"}
    out = {k: _openapi_to_jsonschema(v, close=close, flags=flags, partial=partial) for k, v in node.items()
           if k not in ("nullable", "x-nullable", "readOnly", "writeOnly", "discriminator", "xml")
           and not k.startswith("x-")}
    if "properties" in node and isinstance(node["properties"], dict):
        out["properties"] = {k: _openapi_to_jsonschema(v, close=close, flags=flags, partial=partial)
                             for k, v in node["properties"].items()}
    if partial:
        out.pop("required", None)
        if "oneOf" in out:
            out["anyOf"] = out.pop("oneOf")
    if node.get("nullable") or node.get("x-nullable"):
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        elif "enum" in out:
            out["enum"] = [*out["enum"], None]
        elif kind is None and not any(k in out for k in ("allOf", "anyOf", "oneOf")):
            pass  # no type: null is already allowed
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    if close and "properties" in out and "additionalProperties" not in out \
            and not any(k in out for k in ("allOf", "anyOf", "oneOf")):
        out["additionalProperties"] = False
    return out


# forges whose fakes answer with the fields the product reads rather than the whole object. GitHub's
# error bodies also carry "status" ("422"), which api.github.com sends and its description's
# basic-error and validation-error do not name yet: its error replies are typed but left open.
PARTIAL_REPLIES = {"github"}


def _validator(schema: Any, flags: bool, partial: bool = False, close: bool = True) -> Draft4Validator | None:
    if not schema:
        return None
    return Draft4Validator(_openapi_to_jsonschema(copy.deepcopy(schema), close=close, flags=flags, partial=partial))


def _corrected(described: list[dict[str, Any]], corrections: list[dict[str, Any]], name: str) -> None:
    """Apply <forge>.extra.json's corrections to the extracted operations, in place. Each names where it
    applies ("METHOD TEMPLATE LOCATION", the location a /-path inside the operation as extract.py wrote it)
    and either a `schema` that replaces the description's there, an `or` schema allowed beside it, an `and`
    schema the value must meet as well, `as_items` (the value is an array of what the description gives
    there: GitLab's grape-swagger writes a list reply as one object), or `parameters` the operation also
    takes. One that no longer finds its place fails loudly: the description changed and the correction must
    be looked at again."""
    for correction in corrections:
        for where in correction["where"]:
            method, template, *at = where.split(" ")
            op = next((o for o in described if o["method"] == method and o["path"] == template), None)
            if op is None:
                raise LookupError(f"{name}: correction for {method} {template}: no such described operation")
            if "parameters" in correction:
                op["parameters"] = [*op["parameters"], *correction["parameters"]]
                continue
            *parents, last = at[0].split("/")
            node: Any = op
            for part in parents:
                node = node[int(part) if isinstance(node, list) else part]
            if last not in node:
                raise LookupError(f"{name}: correction for {where}: the description has nothing there")
            if "schema" in correction:
                node[last] = correction["schema"]
            elif correction.get("as_items"):
                node[last] = {"type": "array", "items": node[last]}
            else:  # `or`: either schema will do; `and`: the description's, and this one too
                node[last] = ({"anyOf": [node[last], correction["or"]]} if "or" in correction
                              else {"allOf": [node[last], correction["and"]]})


@cache
def operations(forge: str) -> tuple[Operation, ...]:
    ops: list[Operation] = []
    extra = HERE / f"{forge}.extra.json"
    corrections = json.loads(extra.read_text(encoding="utf-8")).get("corrections", []) if extra.exists() else []
    for name in (f"{forge}.extra.json", f"{forge}.json"):  # the hand-written ones first: they win a tie
        path = HERE / name
        if not path.exists():
            continue
        doc = json.loads(path.read_text(encoding="utf-8"))
        if name == f"{forge}.json" and corrections:
            _corrected(doc["operations"], corrections, extra.name)
        base = doc.get("basePath", "")
        source = doc.get("source", {}).get("repository", name)
        for op in doc["operations"]:
            # a trailing {path} is a file path (Bitbucket's src/{commit}/{path}): it may hold slashes
            regex = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.sub(r"\\\{path\\\}$", ".+", re.escape(base + op["path"])))
            ops.append(Operation(
                op["method"].upper(), base + op["path"], re.compile(regex, re.I if forge == "azure" else 0),
                {(p["in"], p["name"]): p for p in op["parameters"]}, _validator(op.get("body"), forge == "azure"),
                {status: _validator(schema, forge == "azure", forge in PARTIAL_REPLIES,
                                    close=not (forge in PARTIAL_REPLIES and status[0] in "45"))
                 for status, schema in op["responses"].items()},
                forge == "azure", op.get("documentation") or source))
    return tuple(ops)


def find(forge: str, method: str, path: str) -> Operation | None:
    return next((op for op in operations(forge) if op.method == method and op.pattern.fullmatch(path)), None)


def _errors(validator: Draft4Validator, value: Any, what: str) -> list[str]:
    return [f"{what}: {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}"
            for e in sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.path)))][:5]


def _typed(value: str, schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
    except ValueError:
        return value
    if kind == "boolean":
        return {"true": True, "false": False}.get(value.lower(), value)
    return value


def check(forge: str, method: str, path: str, query: dict[str, str], body: Any) -> list[str]:
    op = find(forge, method, path)
    where = f"{forge} {method} {path}"
    if op is None:
        return [f"{where}: no operation in the {forge} API description"]
    problems = []
    for name, value in query.items():
        param = op.params.get(("query", name))
        if param is None:
            problems.append(f"{where}: query parameter {name!r} is not one {op.template} takes")
            continue
        schema = _openapi_to_jsonschema(param.get("schema") or {}, close=False)
        problems += _errors(op.validators.setdefault(f"q:{name}", Draft4Validator(schema)),
                            _typed(value, schema), f"{where}: query {name}")
    for (place, name), param in op.params.items():
        if place == "query" and param["required"] and name not in query:
            problems.append(f"{where}: required query parameter {name!r} missing")
    if op.body is not None and body is not None:
        problems += _errors(op.body, body, f"{where}: body")
    elif op.body is not None:  # no body at all: what the operation requires of one is missing
        empty = {"object": {}, "array": []}.get(op.body.schema.get("type"))
        if empty is not None:
            problems += _errors(op.body, empty, f"{where}: no body")
    return problems


def check_reply(forge: str, method: str, path: str, status: int, payload: Any) -> list[str]:
    op = find(forge, method, path)
    if op is None:
        return []  # the request already failed
    key = str(status)
    if key not in op.responses and f"{key[0]}XX" not in op.responses and "default" not in op.responses:
        if status < 400:  # an error status a description leaves out is the usual case, not a finding
            return [f"{forge} {method} {path}: status {status} is not a reply {op.template} gives"]
        return []
    validator = op.responses.get(key) or op.responses.get(f"{key[0]}XX") or op.responses.get("default")
    if validator is None or status == 204 or isinstance(payload, str):
        return []
    if op.wrapped_lists and validator.schema.get("type") == "array" and isinstance(payload, dict) \
            and set(payload) <= {"count", "value"}:
        payload = payload.get("value")
    return _errors(validator, payload, f"{forge} {method} {path}: reply {status}")


# --- GitHub's GraphQL API ----------------------------------------------------------------------------------


@cache
def graphql_schema() -> graphql.GraphQLSchema:
    """GitHub's schema, built once per process (about 0.6 s). Built with `assume_valid_sdl`: GitHub's SDL
    declares EnterpriseOwnerInfo.repositoryDeployKeySetting twice, which the SDL rules refuse, although the
    schema it describes is valid (graphql.validate_schema finds nothing). The package's own validator builds
    from its introspection JSON, where no such rule applies."""
    return graphql.build_schema((HERE / "github.graphql").read_text(encoding="utf-8"), assume_valid_sdl=True)


GRAPHQL_RULES = (*graphql.specified_rules, graphql.validation.NoDeprecatedCustomRule)


def check_graphql(body: Any) -> list[str]:
    """Problems with a POST /graphql request body (empty: it is a request GitHub's schema allows)."""
    if not isinstance(body, dict) or not isinstance(body.get("query"), str):
        return ["github POST /graphql: the body is not {query, variables, operationName}"]
    odd = set(body) - {"query", "variables", "operationName"}
    if odd:
        return [f"github POST /graphql: body fields {sorted(odd)} are not GraphQL's"]
    try:
        document = graphql.parse(body["query"])
    except graphql.GraphQLError as exc:
        return [f"github POST /graphql: the query does not parse: {exc.message}"]
    schema = graphql_schema()
    problems = [f"github POST /graphql: {e.message}" for e in graphql.validate(schema, document, GRAPHQL_RULES)]
    if problems:
        return problems
    operation = graphql.utilities.get_operation_ast(document, body.get("operationName"))
    if operation is None:
        return ["github POST /graphql: no operation to run (several, and no operationName naming one)"]
    variables = body.get("variables") or {}
    if not isinstance(variables, dict):
        return ["github POST /graphql: variables is not an object"]
    declared = {d.variable.name.value for d in operation.variable_definitions or ()}
    problems += [f"github POST /graphql: variable ${name} is not declared by the operation"
                 for name in sorted(set(variables) - declared)]
    coerced = graphql.execution.values.get_variable_values(schema, operation.variable_definitions or [], variables)
    if isinstance(coerced, list):
        problems += [f"github POST /graphql: {e.message}" for e in coerced]
    return problems
