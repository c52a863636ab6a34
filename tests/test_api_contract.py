"""The contract checker (tests/api_contract.py) catches what a fake written from the documentation lets
through: a misspelt body field, a missing required parameter, an operation the forge does not have, and
a reply the description does not allow; and a fake that names its contract fails the test loudly."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import api_contract
import pytest
from fake_azure import FakeAzure

PR = "/contoso/Fabrikam/_apis/git/repositories/r1/pullRequests/7"
V = {"api-version": "7.1"}
THREAD = {"comments": [{"parentCommentId": 0, "content": "x", "commentType": "text"}], "status": "active"}


def test_a_conforming_request_and_reply_pass() -> None:
    assert api_contract.check("azure", "POST", PR + "/threads", V, THREAD) == []
    assert api_contract.check_reply("azure", "GET", PR + "/statuses", 200,
                                    {"count": 1, "value": [{"state": "succeeded", "iterationId": 2}]}) == []


def test_a_wrong_field_name_is_caught() -> None:
    problems = api_contract.check("azure", "POST", PR + "/threads", V, {**THREAD, "staus": "active"})
    assert len(problems) == 1 and "'staus' was unexpected" in problems[0]
    nested = {"comments": [{"parentCommentId": 0, "body": "x"}]}  # GitLab's spelling, not Azure's
    assert any("'body' was unexpected" in p for p in api_contract.check("azure", "POST", PR + "/threads", V, nested))


def test_a_wrong_type_or_enum_is_caught() -> None:
    problems = api_contract.check("azure", "POST", PR + "/threads", V, {**THREAD, "status": "open"})
    assert problems and "status" in problems[0]
    assert api_contract.check("azure", "GET", PR + "/iterations/2/changes", {**V, "$top": "ten"}, None)


def test_a_missing_required_parameter_is_caught() -> None:
    assert api_contract.check("azure", "GET", PR + "/threads", {}, None) == [
        f"azure GET {PR}/threads: required query parameter 'api-version' missing"]
    items = "/contoso/Fabrikam/_apis/git/repositories/r1/items"
    assert any("'path' missing" in p for p in api_contract.check("azure", "GET", items, V, None))


def test_an_unknown_operation_or_parameter_is_caught() -> None:
    assert "no operation" in api_contract.check("azure", "DELETE", PR + "/threads", V, None)[0]
    assert "no operation" in api_contract.check("azure", "GET", "/contoso/_apis/nowhere", V, None)[0]
    assert "'includeContents' is not one" in api_contract.check("azure", "GET", PR + "/threads",
                                                                 {**V, "includeContents": "true"}, None)[0]


def test_a_reply_the_description_does_not_allow_is_caught() -> None:
    bad_state = {"count": 1, "value": [{"state": "passed"}]}
    assert "state" in api_contract.check_reply("azure", "GET", PR + "/statuses", 200, bad_state)[0]
    extra_field = {"value": [{"state": "succeeded", "genre": "code-review"}], "count": 1}
    assert "'genre' was unexpected" in api_contract.check_reply("azure", "GET", PR + "/statuses", 200,
                                                                extra_field)[0]
    assert "status 201" in api_contract.check_reply("azure", "POST", PR + "/threads", 201, THREAD)[0]
    # an error status the description leaves out is how forges answer, not a finding
    assert api_contract.check_reply("azure", "POST", PR + "/threads", 400, {"message": "no"}) == []


class _SloppyAzure(FakeAzure):
    def route(self, rec, token):  # type: ignore[no-untyped-def]
        return 200, {"authenticatedUser": {"id": "u1", "login": "bot"}}, {}


def test_a_fake_that_breaks_the_contract_fails_the_test() -> None:
    fake = _SloppyAzure()
    with urllib.request.urlopen(f"{fake.url}/contoso/_apis/connectionData?api-version=7.1&connectOption=1") as r:
        assert json.load(r)["authenticatedUser"]["id"] == "u1"  # the product would have been fooled
    with pytest.raises(AssertionError) as caught:
        fake.close()
    text = str(caught.value)
    assert "'connectOption' is not one" in text and "'login' was unexpected" in text
    fake.assert_conforms()  # reported once


def test_every_vendored_description_records_its_source() -> None:
    for path in sorted(Path(api_contract.HERE).glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if path.name.endswith(".extra.json"):
            assert all(op.get("documentation") for op in doc["operations"]), path.name
        else:
            assert {"repository", "path", "commit"} <= set(doc["source"]), path.name
            assert len(doc["source"]["commit"]) == 40
