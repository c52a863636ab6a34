"""The review tools: definitions from config/tools.yaml joined by name with their implementations.

Data may reword a tool but never add one, so every defined tool must be implemented here or in
tools.py, and every implemented tool must be defined. Inputs are checked before a tool runs and
every complaint is written for the model: what was wrong, what was received, a correct call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from ocr_hook import config_files
from ocr_hook.agent import tools
from ocr_hook.agent.tool_api import PHASES, ToolSpec
from ocr_hook.errors import ConfigError

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

TOOLS_FILE = "tools.yaml"

# The agent loop acts on these itself (ending the file, collecting comments); tools.py runs the rest.
LOOP_TOOLS = frozenset({"task_done", "code_comment", "check_verdict"})

_ENTRY_KEYS = frozenset({"name", "description", "phases", "input_schema", "example"})
_REQUIRED_ENTRY_KEYS = frozenset({"name", "description", "phases", "input_schema"})

# Keywords the Messages API's strict mode cannot enforce; bounds are checked in code instead.
_UNSUPPORTED_KEYWORDS = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "minProperties",
        "maxProperties",
        "maxItems",
        "$ref",
        "$dynamicRef",
        "patternProperties",
        "dependentSchemas",
        "if",
        "then",
        "else",
        "not",
    }
)

# String fields that may legitimately be empty (an empty suggestion deletes the quoted code) or
# whitespace only (a search for spaces); array fields that may be empty (no filter).
_MAY_BE_EMPTY_STRING = frozenset({"suggestion_code"})
_MAY_BE_BLANK_STRING = frozenset({"search_text"})
_MAY_BE_EMPTY_ARRAY = frozenset({"file_patterns", "evidence", "requirements"})

_MAX_LISTED_PROBLEMS = 5
_MAX_SHOWN_VALUE = 80


@dataclass(frozen=True)
class _Catalogue:
    specs: dict[str, ToolSpec]  # in the order of the data file
    examples: dict[str, dict[str, Any]]


def implemented_tools() -> frozenset[str]:
    """Every tool name the code can act on."""
    return LOOP_TOOLS | frozenset(tools.CONTEXT_TOOLS)


def build_specs(data: object) -> dict[str, ToolSpec]:
    """Tool specs from parsed tools.yaml data; ConfigError naming the tool on any defect."""
    return _build_catalogue(data).specs


def load_tool_specs() -> dict[str, ToolSpec]:
    """The shipped tool specs by name, in the data file's order (checked once, then cached)."""
    return dict(_catalogue().specs)


def tools_for_phase(phase: str) -> list[ToolSpec]:
    """The tools the model may call in `phase` ("plan", "main" or "final"), in a stable order."""
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r}; expected one of {', '.join(PHASES)}")
    return [spec for spec in _catalogue().specs.values() if phase in spec.phases]


def validate_input(name: str, tool_input: object, phase: str) -> str | None:
    """None when the call may run; otherwise the reason, worded for the model."""
    available = tools_for_phase(phase)
    available_names = ", ".join(spec.name for spec in available)
    catalogue = _catalogue()
    spec = catalogue.specs.get(name)
    if spec is None:
        return (
            f"There is no tool named {_show(name)}. "
            f"Tools available in the {phase} phase: {available_names}."
        )
    if phase not in spec.phases:
        reason = {
            "plan": " The plan phase only gathers context; comments and task_done come in the review.",
            "final": " This is the last round for this file: send any remaining comments and call task_done.",
        }.get(phase, "")
        return (
            f"The tool `{name}` is not available in the {phase} phase.{reason} "
            f"Tools available now: {available_names}."
        )
    problems = _schema_problems(spec, tool_input) or list(_range_problems(tool_input))
    if not problems:
        return None
    shown = problems[:_MAX_LISTED_PROBLEMS]
    if len(problems) > len(shown):
        shown.append(f"... and {len(problems) - len(shown)} more problems of the same kind")
    listing = "\n".join(f"- {problem}" for problem in shown)
    example = json.dumps(catalogue.examples[name], ensure_ascii=False)
    return f"Invalid input for `{name}`:\n{listing}\nA correct call looks like this: {example}"


@cache
def _catalogue() -> _Catalogue:
    return _build_catalogue(config_files.read_yaml(TOOLS_FILE))


def _build_catalogue(data: object) -> _Catalogue:
    if not isinstance(data, Mapping) or not isinstance(data.get("tools"), list):
        raise ConfigError(f"{TOOLS_FILE}: expected a mapping with a `tools` list")
    specs: dict[str, ToolSpec] = {}
    examples: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(data["tools"]):
        spec, example = _build_one(index, entry)
        if spec.name in specs:
            raise ConfigError(f"{TOOLS_FILE}: tool {spec.name!r} is defined twice")
        specs[spec.name] = spec
        examples[spec.name] = example
    missing = sorted(implemented_tools() - set(specs))
    if missing:
        raise ConfigError(f"{TOOLS_FILE}: no definition for the implemented tool(s) {', '.join(missing)}")
    return _Catalogue(specs=specs, examples=examples)


def _build_one(index: int, entry: object) -> tuple[ToolSpec, dict[str, Any]]:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) or not entry["name"]:
        raise ConfigError(f"{TOOLS_FILE}: tool #{index + 1} has no name")
    name: str = entry["name"]

    def fail(problem: str) -> ConfigError:
        return ConfigError(f"{TOOLS_FILE}: tool {name!r}: {problem}")

    if name not in implemented_tools():
        raise fail("defined but not implemented (data can reword a tool, never add one)")
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise fail(f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_ENTRY_KEYS))}")
    absent = sorted(_REQUIRED_ENTRY_KEYS - set(entry))
    if absent:
        raise fail(f"missing key(s) {', '.join(absent)}")
    description = entry["description"]
    if not isinstance(description, str) or not description.strip():
        raise fail("description must be a non-empty string")
    phases = entry["phases"]
    if not isinstance(phases, list) or not phases or not all(isinstance(p, str) for p in phases):
        raise fail(f"phases must be a non-empty list of {', '.join(PHASES)}")
    bad_phases = sorted(set(phases) - set(PHASES))
    if bad_phases:
        raise fail(f"unknown phase(s) {', '.join(bad_phases)}; expected {', '.join(PHASES)}")
    schema = entry["input_schema"]
    if not isinstance(schema, Mapping):
        raise fail("input_schema must be a mapping")
    schema = _plain(schema)
    import jsonschema  # ~50 ms: paid when the tools are first needed, not by every import of the agent

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise fail(f"input_schema is not valid JSON Schema: {exc.message}") from None
    strict_problems = list(_strict_problems(schema, "input_schema"))
    if strict_problems:
        raise fail(f"input_schema is not strict: {strict_problems[0]}")
    example = _plain(entry.get("example", {}))
    spec = ToolSpec(name=name, description=description.strip(), input_schema=schema, phases=frozenset(phases))
    example_problems = _schema_problems(spec, example) or list(_range_problems(example))
    if example_problems:
        raise fail(f"example is not a valid call: {example_problems[0]}")
    return spec, example


def _plain(value: Any) -> Any:
    """A JSON-compatible deep copy, so cached specs share nothing with the parsed YAML."""
    return json.loads(json.dumps(value))


def _strict_problems(node: object, where: str) -> Iterator[str]:
    """What keeps a schema from strict mode: open objects, unsupported keywords, untyped nodes."""
    if not isinstance(node, Mapping):
        yield f"{where} must be a mapping"
        return
    for keyword in sorted(_UNSUPPORTED_KEYWORDS & set(node)):
        yield f"{where} uses `{keyword}`, which strict mode does not support (check it in code)"
    kind = node.get("type")
    if kind is None and "enum" not in node and "anyOf" not in node:
        yield f"{where} has no type"
    if kind == "object":
        if node.get("additionalProperties") is not False:
            yield f"{where} must set additionalProperties: false"
        properties = node.get("properties")
        if not isinstance(properties, Mapping):
            yield f"{where} must list its properties"
            properties = {}
        required = node.get("required")
        if not isinstance(required, list):
            yield f"{where} must have a required list"
        else:
            stray = [key for key in required if key not in properties]
            if stray:
                yield f"{where} requires undeclared properties {', '.join(map(str, stray))}"
        for key, child in properties.items():
            yield from _strict_problems(child, f"{where}.properties.{key}")
    if kind == "array":
        yield from _strict_problems(node.get("items"), f"{where}.items")
    for position, child in enumerate(node.get("anyOf", ())):
        yield from _strict_problems(child, f"{where}.anyOf[{position}]")


def _schema_problems(spec: ToolSpec, tool_input: object) -> list[str]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(spec.input_schema)
    errors = sorted(validator.iter_errors(tool_input), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    return [line for error in errors for line in _describe(error)]


def _describe(error: ValidationError) -> list[str]:
    where = _field(error.absolute_path)
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if error.validator == "required" and isinstance(error.instance, Mapping):
        missing = [key for key in error.validator_value if key not in error.instance]
        return [f"{_field([*error.absolute_path, key])}: required field is missing" for key in missing]
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        allowed = list(schema.get("properties", {}))
        extra = [key for key in error.instance if key not in allowed]
        return [
            f"{_field([*error.absolute_path, key])}: unknown field (received {_show(error.instance[key])}); "
            f"allowed fields here: {', '.join(allowed)}"
            for key in extra
        ]
    if error.validator == "enum":
        choices = ", ".join(map(str, error.validator_value))
        return [f"{where}: received {_show(error.instance)}; expected one of: {choices}"]
    if error.validator == "type":
        return [
            f"{where}: received {_show(error.instance)} ({_json_type(error.instance)}); "
            f"expected {_article(str(error.validator_value))}"
        ]
    return [f"{where}: {error.message}"]


def _range_problems(tool_input: object) -> Iterator[str]:
    """Bounds strict mode cannot state: no empty strings or lists, sensible line ranges."""
    if not isinstance(tool_input, Mapping):
        return
    yield from _emptiness_problems(tool_input, [])
    start = tool_input.get("start_line")
    end = tool_input.get("end_line")
    if isinstance(start, int) and start < 1:
        yield f"`start_line`: received {start}; expected a line number of 1 or more (lines count from 1)"
    if isinstance(end, int) and end < 1:
        yield f"`end_line`: received {end}; expected a line number of 1 or more (lines count from 1)"
    elif isinstance(end, int) and end < (start if isinstance(start, int) else 1):
        yield f"`end_line`: received {end}; expected a number not below start_line ({start})"


def _emptiness_problems(value: object, path: list[str | int]) -> Iterator[str]:
    name = next((part for part in reversed(path) if isinstance(part, str)), "")
    if isinstance(value, Mapping):
        for key, child in value.items():
            yield from _emptiness_problems(child, [*path, key])
    elif isinstance(value, list):
        if not value and name not in _MAY_BE_EMPTY_ARRAY:
            yield f"{_field(path)}: received an empty list; expected at least one entry"
        for position, child in enumerate(value):
            yield from _emptiness_problems(child, [*path, position])
    elif isinstance(value, str) and name not in _MAY_BE_EMPTY_STRING:
        if value == "" or (not value.strip() and name not in _MAY_BE_BLANK_STRING):
            yield f"{_field(path)}: received {_show(value)}; expected a non-empty text"


def _field(path: Any) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return f"`{text}`" if text else "the input"


def _show(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > _MAX_SHOWN_VALUE:
        text = text[: _MAX_SHOWN_VALUE - 1] + "…"
    return text


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _article(kind: str) -> str:
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"
