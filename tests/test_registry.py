"""The tool registry: shipped definitions, phases, strict schemas, and input errors for the model."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from ocr_hook import config_files
from ocr_hook.agent import registry
from ocr_hook.agent.registry import build_specs, load_tool_specs, tools_for_phase, validate_input
from ocr_hook.errors import ConfigError
from ocr_hook.findings import Category, Severity

SIX = ["task_done", "code_comment", "file_read", "file_read_diff", "file_find", "code_search"]
NUMERIC_OR_LENGTH_BOUNDS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                            "minLength", "maxLength"}


def shipped_data() -> dict[str, Any]:
    return copy.deepcopy(config_files.read_yaml("tools.yaml"))


def entry(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(tool for tool in data["tools"] if tool["name"] == name)


def object_nodes(schema: dict[str, Any], where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield where, schema
    for key, child in schema.get("properties", {}).items():
        yield from object_nodes(child, f"{where}.{key}")
    if "items" in schema:
        yield from object_nodes(schema["items"], f"{where}[]")


def example_in(message: str) -> dict[str, Any]:
    marker = "A correct call looks like this: "
    assert marker in message, message
    return json.loads(message.split(marker, 1)[1])


# --- shipped definitions ------------------------------------------------------------------------


def test_the_six_tools_are_defined_in_a_stable_order():
    assert list(load_tool_specs()) == [*SIX, "check_verdict"]  # check_verdict: the checks pass's own (DESIGN 20)
    assert [s.name for s in tools_for_phase("main")] == SIX  # same order every call
    assert load_tool_specs() == build_specs(shipped_data())


@pytest.mark.parametrize(("phase", "expected"), [
    ("plan", ["file_read_diff", "file_find", "code_search"]),
    ("main", SIX),
    ("final", ["task_done", "code_comment"]),
    ("checks", ["task_done", "file_read", "file_read_diff", "file_find", "code_search", "check_verdict"]),
])
def test_phase_tool_sets(phase: str, expected: list[str]):
    assert [spec.name for spec in tools_for_phase(phase)] == expected


def test_unknown_phase_is_a_programming_error():
    with pytest.raises(ValueError, match=r"unknown phase"):
        tools_for_phase("review")


@pytest.mark.parametrize("name", SIX)
def test_every_schema_is_valid_draft_2020_12(name: str):
    schema = load_tool_specs()[name].input_schema
    meta = jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA)
    assert list(meta.iter_errors(schema)) == []
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("name", SIX)
def test_every_schema_is_strict(name: str):
    spec = load_tool_specs()[name]
    assert spec.to_api()["strict"] is True
    assert spec.input_schema["type"] == "object"
    objects = 0
    for where, node in object_nodes(spec.input_schema):
        assert not NUMERIC_OR_LENGTH_BOUNDS & set(node), where
        assert "type" in node, where
        if node["type"] == "object":
            objects += 1
            assert node["additionalProperties"] is False, where
            assert isinstance(node["required"], list), where
            assert set(node["required"]) <= set(node["properties"]), where
    assert objects >= 1


def test_required_lists_and_optional_inputs():
    specs = load_tool_specs()
    required = {name: specs[name].input_schema["required"] for name in SIX}
    assert required == {
        "task_done": ["state"],
        "code_comment": ["comments"],
        "file_read": ["file_path"],
        "file_read_diff": ["path_array"],
        "file_find": ["query_name"],
        "code_search": ["search_text"],
    }
    item = specs["code_comment"].input_schema["properties"]["comments"]["items"]
    assert item["required"] == ["content", "existing_code", "severity", "category"]
    assert set(item["properties"]) == {"content", "existing_code", "suggestion_code", "severity", "category"}
    assert set(specs["file_read"].input_schema["properties"]) == {"file_path", "start_line", "end_line"}
    assert set(specs["code_search"].input_schema["properties"]) == {
        "search_text", "file_patterns", "case_sensitive", "use_perl_regexp"}
    assert set(specs["file_find"].input_schema["properties"]) == {"query_name", "case_sensitive"}


def test_enums_match_the_findings_types():
    specs = load_tool_specs()
    assert specs["task_done"].input_schema["properties"]["state"]["enum"] == ["DONE", "FAILED"]
    item = specs["code_comment"].input_schema["properties"]["comments"]["items"]["properties"]
    assert item["severity"]["enum"] == [s.value for s in Severity]
    assert item["category"]["enum"] == [c.value for c in Category]


def test_descriptions_say_when_to_use_and_what_not_to_do():
    specs = load_tool_specs()
    comment = specs["code_comment"].description
    assert "existing_code" in comment and "line numbers" in comment and "current file" in comment
    for name in ("file_read", "file_read_diff", "code_search"):
        assert "understanding" in specs[name].description, name
    assert "500 lines" in specs["file_read"].description
    assert "100" in specs["file_find"].description and "// The file was not found" in specs["file_find"].description
    assert "100 per file" in specs["code_search"].description
    assert all(len(spec.description) > 80 for spec in specs.values())


# --- loading from data: defects are configuration errors ---------------------------------------


def test_a_defined_tool_without_implementation_is_a_config_error():
    data = shipped_data()
    extra = copy.deepcopy(entry(data, "file_find"))
    extra["name"] = "run_shell"
    data["tools"].append(extra)
    with pytest.raises(ConfigError, match=r"run_shell.*not implemented"):
        build_specs(data)


def test_an_implemented_tool_without_definition_is_a_config_error():
    data = shipped_data()
    data["tools"] = [tool for tool in data["tools"] if tool["name"] != "code_search"]
    with pytest.raises(ConfigError, match=r"code_search"):
        build_specs(data)


def test_unknown_phase_is_a_config_error_naming_the_tool():
    data = shipped_data()
    entry(data, "file_find")["phases"] = ["plan", "review"]
    with pytest.raises(ConfigError, match=r"'file_find'.*unknown phase.*review"):
        build_specs(data)


def test_a_nested_open_object_is_not_strict():
    data = shipped_data()
    del entry(data, "code_comment")["input_schema"]["properties"]["comments"]["items"]["additionalProperties"]
    with pytest.raises(ConfigError, match=r"'code_comment'.*additionalProperties"):
        build_specs(data)


def test_numeric_bounds_are_rejected_because_strict_mode_cannot_enforce_them():
    data = shipped_data()
    entry(data, "file_read")["input_schema"]["properties"]["start_line"]["minimum"] = 1
    with pytest.raises(ConfigError, match=r"'file_read'.*minimum"):
        build_specs(data)


def test_a_missing_required_list_is_not_strict():
    data = shipped_data()
    del entry(data, "file_find")["input_schema"]["required"]
    with pytest.raises(ConfigError, match=r"'file_find'.*required"):
        build_specs(data)


def test_an_invalid_json_schema_is_a_config_error():
    data = shipped_data()
    entry(data, "task_done")["input_schema"]["properties"]["state"]["type"] = "strng"
    with pytest.raises(ConfigError, match=r"'task_done'.*not valid JSON Schema"):
        build_specs(data)


def test_an_example_that_breaks_its_own_schema_is_a_config_error():
    data = shipped_data()
    entry(data, "task_done")["example"] = {"state": "done"}
    with pytest.raises(ConfigError, match=r"'task_done'.*example"):
        build_specs(data)


def test_duplicate_and_unknown_keys_are_config_errors():
    data = shipped_data()
    data["tools"].append(copy.deepcopy(entry(data, "file_find")))
    with pytest.raises(ConfigError, match=r"'file_find' is defined twice"):
        build_specs(data)
    data = shipped_data()
    entry(data, "file_find")["limit"] = 5
    with pytest.raises(ConfigError, match=r"'file_find'.*unknown key.*limit"):
        build_specs(data)


def test_data_may_reword_a_tool():
    data = shipped_data()
    entry(data, "file_find")["description"] = "Locate files by part of their name."
    assert build_specs(data)["file_find"].description == "Locate files by part of their name."


@pytest.mark.parametrize("data", [None, [], {"tools": {}}, {"tools": [{"description": "x"}]}])
def test_malformed_data_is_a_config_error(data: object):
    with pytest.raises(ConfigError, match=r"tools.yaml"):
        build_specs(data)


# --- validate_input -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", SIX)
def test_the_shipped_examples_are_accepted(name: str):
    example = config_files.read_yaml("tools.yaml")
    call = next(t for t in example["tools"] if t["name"] == name)["example"]
    phase = "main"
    assert validate_input(name, call, phase) is None


def test_minimal_calls_with_defaults_left_out_are_accepted():
    assert validate_input("file_read", {"file_path": "a.py"}, "main") is None
    assert validate_input("file_find", {"query_name": "a"}, "plan") is None
    assert validate_input("code_search", {"search_text": " "}, "plan") is None  # spaces are a search
    assert validate_input("code_search", {"search_text": "x", "file_patterns": []}, "plan") is None
    comment = {"content": "c", "existing_code": "x = 1", "suggestion_code": "", "severity": "low",
               "category": "style"}
    assert validate_input("code_comment", {"comments": [comment]}, "final") is None


def test_unknown_tool_lists_what_this_phase_offers():
    message = validate_input("run_shell", {"cmd": "ls"}, "plan")
    assert message is not None
    assert '"run_shell"' in message
    assert "file_read_diff, file_find, code_search" in message
    assert "task_done" not in message


@pytest.mark.parametrize(("name", "phase"), [("code_comment", "plan"), ("task_done", "plan"),
                                              ("file_read", "plan"), ("file_find", "final")])
def test_a_tool_outside_its_phase_is_refused(name: str, phase: str):
    message = validate_input(name, {}, phase)
    assert message is not None
    assert f"`{name}` is not available in the {phase} phase" in message
    available = ", ".join(spec.name for spec in tools_for_phase(phase))
    assert available in message


def test_missing_required_field_is_named_with_a_correct_example():
    message = validate_input("file_read", {"start_line": 3}, "main")
    assert message is not None
    assert "`file_path`: required field is missing" in message
    assert validate_input("file_read", example_in(message), "main") is None


def test_wrong_type_says_what_was_received_and_expected():
    message = validate_input("file_read", {"file_path": "a.py", "start_line": "ten"}, "main")
    assert message is not None
    assert '`start_line`: received "ten" (a string); expected an integer' in message


def test_wrong_enum_value_lists_the_choices_with_the_nested_field():
    comment = {"content": "c", "existing_code": "x", "severity": "blocker", "category": "bug"}
    message = validate_input("code_comment", {"comments": [comment]}, "main")
    assert message is not None
    assert '`comments[0].severity`: received "blocker"; expected one of: critical, high, medium, low' in message
    assert validate_input("code_comment", example_in(message), "main") is None
    message = validate_input("task_done", {"state": "done"}, "main")
    assert message is not None and "expected one of: DONE, FAILED" in message


def test_unknown_field_is_named_with_the_allowed_ones():
    comment = {"content": "c", "existing_code": "x", "severity": "low", "category": "bug", "line": 12}
    message = validate_input("code_comment", {"comments": [comment]}, "main")
    assert message is not None
    assert "`comments[0].line`: unknown field (received 12)" in message
    assert "content, existing_code, suggestion_code, severity, category" in message


def test_non_object_input_is_refused():
    message = validate_input("file_find", "UserService", "main")
    assert message is not None
    assert 'the input: received "UserService" (a string); expected an object' in message


@pytest.mark.parametrize(("name", "tool_input", "needle"), [
    ("file_read", {"file_path": "a.py", "start_line": 0}, "`start_line`: received 0"),
    ("file_read", {"file_path": "a.py", "start_line": 10, "end_line": 4},
     "`end_line`: received 4; expected a number not below start_line (10)"),
    ("file_read", {"file_path": "a.py", "end_line": 0}, "`end_line`: received 0"),
    ("file_read", {"file_path": ""}, '`file_path`: received ""; expected a non-empty text'),
    ("file_read", {"file_path": "   "}, "`file_path`: received \"   \""),
    ("file_find", {"query_name": ""}, "`query_name`: received \"\""),
    ("code_search", {"search_text": ""}, "`search_text`: received \"\""),
    ("code_search", {"search_text": "x", "file_patterns": [""]}, "`file_patterns[0]`: received \"\""),
    ("file_read_diff", {"path_array": []}, "`path_array`: received an empty list"),
    ("code_comment", {"comments": []}, "`comments`: received an empty list"),
    ("code_comment", {"comments": [{"content": "c", "existing_code": " ", "severity": "low", "category": "bug"}]},
     "`comments[0].existing_code`: received \" \""),
])
def test_range_checks_the_schema_cannot_express(name: str, tool_input: dict[str, Any], needle: str):
    message = validate_input(name, tool_input, "main")
    assert message is not None
    assert needle in message
    assert validate_input(name, example_in(message), "main") is None


def test_many_problems_are_listed_but_capped():
    comments = [{"content": "c", "existing_code": "x", "severity": "bad", "category": "bug"} for _ in range(9)]
    message = validate_input("code_comment", {"comments": comments}, "main")
    assert message is not None
    assert message.count("expected one of") == 5
    assert "and 4 more problems" in message


def test_specs_are_cached_and_cannot_be_changed_through_the_returned_dict():
    first = load_tool_specs()
    first.pop("task_done")
    assert "task_done" in load_tool_specs()
    assert registry.implemented_tools() == frozenset([*SIX, "check_verdict"])
