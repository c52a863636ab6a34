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
    # a request that leaves out its whole body misses what the body requires; an optional body may be left out
    sarifs = "/repos/octo/app/code-scanning/sarifs"
    assert [p.rsplit(": ", 1)[1] for p in api_contract.check("github", "POST", sarifs, {}, None)] == [
        f"'{name}' is a required property" for name in ("commit_sha", "ref", "sarif")]
    gitlab_mr = "/api/v4/projects/42/merge_requests/3"
    assert "no body: (top): 'note' is a required" in api_contract.check("gitlab", "POST", gitlab_mr + "/draft_notes",
                                                                          {}, None)[0]
    assert api_contract.check("gitlab", "POST", gitlab_mr + "/draft_notes/bulk_publish", {}, None) == []


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


def test_a_fake_forge_without_a_description_does_not_start() -> None:
    from fake_forge import FakeForge

    class Unchecked(FakeForge):
        name = "somewhere"

    class Unknown(FakeForge):
        contract = "sourcehut"  # no description vendored

    for fake in (Unchecked, Unknown):
        with pytest.raises(TypeError, match="names no API description"):
            fake()


def test_every_vendored_description_records_its_source() -> None:
    for path in sorted(Path(api_contract.HERE).glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if path.name.endswith(".extra.json"):
            assert all(op.get("documentation") for op in doc["operations"]), path.name
            assert all(c.get("documentation") and c.get("reason") and c.get("where")
                       for c in doc.get("corrections", [])), path.name
        else:
            assert {"repository", "path"} <= set(doc["source"]), path.name
            if "package" in doc["source"]:  # a registry package that ships the official description
                assert doc["source"]["package"].count("@") == 2 and doc["source"]["upstream"], path.name
                assert doc["source"]["integrity"].startswith("sha512-"), path.name  # the tarball's, as npm has it
            else:
                assert len(doc["source"]["commit"]) == 40, path.name


GH_PR = "/repos/octo/app/pulls/7"
REVIEW = {"commit_id": "a" * 40, "event": "COMMENT", "body": "x",
          "comments": [{"path": "app.py", "line": 3, "side": "RIGHT", "body": "y"}]}


def test_github_requests_and_replies_are_checked() -> None:
    assert api_contract.check("github", "POST", GH_PR + "/reviews", {}, REVIEW) == []
    misspelt = {**REVIEW, "comments": [{**REVIEW["comments"][0], "position_line": 3}]}
    assert any("'position_line' was unexpected" in p
               for p in api_contract.check("github", "POST", GH_PR + "/reviews", {}, misspelt))
    assert any("'COMMENTED' is not one of" in p for p in api_contract.check("github", "POST", GH_PR + "/reviews", {},
                                                          {**REVIEW, "event": "COMMENTED"}))
    sarif = {"commit_sha": "a" * 40, "ref": "refs/heads/main", "sarif": "H4sI"}
    assert api_contract.check("github", "POST", "/repos/octo/app/code-scanning/sarifs", {}, sarif) == []
    assert any("'ref' is a required" in p for p in api_contract.check(
        "github", "POST", "/repos/octo/app/code-scanning/sarifs", {}, {k: sarif[k] for k in ("commit_sha", "sarif")}))
    assert "'perpage' is not one" in api_contract.check("github", "GET", GH_PR + "/files", {"perpage": "2"}, None)[0]
    # a reply: a field GitHub never sends, a wrong type, a status the operation does not give
    assert api_contract.check_reply("github", "GET", "/user", 200, {"login": "bot", "id": 1, "type": "User"}) == []
    assert any("not valid under any" in p  # neither a private nor a public user has a "username"
               for p in api_contract.check_reply("github", "GET", "/user", 200, {"login": "bot", "username": "bot"}))
    assert api_contract.check_reply("github", "GET", GH_PR + "/files", 200, [{"filename": 7}])
    assert "status 201" in api_contract.check_reply("github", "POST", GH_PR + "/reviews", 201, {"id": 1})[0]


def test_fake_github_checks_its_traffic() -> None:
    from fake_github import FakeGitHub

    fake = FakeGitHub()
    fake.tokens["t"] = "write"
    request = urllib.request.Request(f"{fake.url}/user?fields=login", headers={"Authorization": "Bearer t"})
    with urllib.request.urlopen(request) as r:
        assert json.load(r)["login"] == "ocr-bot"
    with pytest.raises(AssertionError, match="'fields' is not one"):
        fake.close()


GT_PR = "/api/v1/repos/octo/app/pulls/7"


def test_gitea_requests_and_replies_are_checked() -> None:
    review = {"commit_id": "a" * 40, "event": "COMMENT", "body": "x",
              "comments": [{"path": "app.py", "body": "y", "new_position": 3, "old_position": 0}]}
    assert api_contract.check("gitea", "POST", GT_PR + "/reviews", {}, review) == []
    assert api_contract.check("gitea", "GET", GT_PR + ".diff", {}, None) == []  # {index}.{diffType}
    misspelt = {**review, "comments": [{"path": "app.py", "body": "y", "line": 3}]}  # GitHub's spelling
    assert any("'line' was unexpected" in p for p in api_contract.check("gitea", "POST", GT_PR + "/reviews", {},
                                                                         misspelt))
    # the mismatch the checker found: review comments are one list, the operation takes no page or limit
    assert "'limit' is not one" in api_contract.check("gitea", "GET", GT_PR + "/reviews/9/comments",
                                                      {"limit": "50"}, None)[0]
    assert api_contract.check("gitea", "GET", GT_PR + "/reviews", {"limit": "50", "page": "2"}, None) == []
    assert api_contract.check_reply("gitea", "GET", GT_PR + "/reviews", 200,
                                    [{"id": 1, "comments_count": 2, "user": {"id": 5, "login": "bot"}}]) == []
    assert any("'comment_count' was unexpected" in p
               for p in api_contract.check_reply("gitea", "GET", GT_PR + "/reviews", 200, [{"comment_count": 2}]))
    assert api_contract.check_reply("gitea", "GET", "/api/v1/user", 200, {"id": "5"})  # id is an integer


GL_MR = "/api/v4/projects/group%2Fapp/merge_requests/3"  # {id}: the numeric id or the URL-encoded path


def test_gitlab_requests_and_replies_are_checked() -> None:
    position = {"position_type": "text", "base_sha": "b" * 40, "start_sha": "b" * 40, "head_sha": "a" * 40,
                "new_path": "app.py", "old_path": "app.py", "new_line": 3}
    assert api_contract.check("gitlab", "POST", GL_MR + "/draft_notes", {}, {"note": "x", "position": position}) == []
    # the acceptance fake's old mistake: a draft note's text is `note`, a note's is `body`
    wrong = api_contract.check("gitlab", "POST", GL_MR + "/draft_notes", {}, {"body": "x", "position": position})
    assert any("'note' is a required" in p for p in wrong) and any("'body' was unexpected" in p for p in wrong)
    assert any("'position_type' is a required" in p for p in api_contract.check(
        "gitlab", "POST", GL_MR + "/draft_notes", {}, {"note": "x", "position": {"new_line": 3}}))
    assert api_contract.check("gitlab", "PUT", GL_MR + "/draft_notes/7/publish", {}, None) == []
    assert "'resolved' missing" in api_contract.check("gitlab", "PUT", GL_MR + "/discussions/ab12", {}, None)[0]
    assert api_contract.check("gitlab", "POST", GL_MR + "/notes", {}, {"body": "x"}) == []
    assert api_contract.check_reply("gitlab", "GET", GL_MR + "/discussions", 200, [
        {"id": "ab12", "individual_note": False, "notes": [{"id": 1, "type": "DiffNote", "body": "x",
                                                           "author": {"id": 7, "username": "bot"}}]}]) == []
    assert any("'user' was unexpected" in p for p in api_contract.check_reply(  # GitLab's author is `author`
        "gitlab", "GET", GL_MR + "/discussions", 200, [{"id": "ab12", "notes": [{"id": 1, "user": {}}]}]))



def test_gitlab_user_merge_request_and_diffs_are_checked_against_gitlabs_openapi_v2() -> None:
    for path in ("/api/v4/user", GL_MR, GL_MR + "/diffs"):  # extracted (gitlab.json), not hand-written
        op = api_contract.find("gitlab", "GET", path)
        assert op is not None and op.source == "gitlabhq/gitlabhq", path
    assert api_contract.check_reply("gitlab", "GET", "/api/v4/user", 200,
                                    {"id": 7, "username": "bot", "state": "active"}) == []
    assert any("'login' was unexpected" in p for p in api_contract.check_reply(  # GitHub's spelling
        "gitlab", "GET", "/api/v4/user", 200, {"id": 7, "login": "bot"}))
    assert api_contract.check("gitlab", "GET", GL_MR, {"render_html": "true"}, None) == []
    assert "'with_diffs' is not one" in api_contract.check("gitlab", "GET", GL_MR, {"with_diffs": "1"}, None)[0]
    refs = {"base_sha": "b" * 40, "head_sha": "a" * 40, "start_sha": "b" * 40}
    assert api_contract.check_reply("gitlab", "GET", GL_MR, 200,
                                    {"iid": 3, "sha": "a" * 40, "state": "opened", "diff_refs": refs}) == []
    assert any("'head' was unexpected" in p for p in api_contract.check_reply(
        "gitlab", "GET", GL_MR, 200, {"iid": 3, "diff_refs": {"head": "a" * 40}}))
    assert api_contract.check("gitlab", "GET", GL_MR + "/diffs", {"page": "2", "per_page": "100"}, None) == []
    diff = {"old_path": "app.py", "new_path": "app.py", "diff": "@@ -1 +1 @@\n-a\n+b\n", "new_file": False,
            "renamed_file": False, "deleted_file": False}
    assert api_contract.check_reply("gitlab", "GET", GL_MR + "/diffs", 200, [diff]) == []
    # the description gives one Diff; gitlab.extra.json's correction makes the reply the list GitLab sends
    assert "is not of type 'array'" in api_contract.check_reply("gitlab", "GET", GL_MR + "/diffs", 200, diff)[0]
    assert any("'path' was unexpected" in p for p in api_contract.check_reply(
        "gitlab", "GET", GL_MR + "/diffs", 200, [{**diff, "path": "app.py"}]))


def test_gitlab_draft_notes_are_checked_against_gitlabs_openapi_v2() -> None:
    drafts = GL_MR + "/draft_notes"
    for method, path in (("GET", drafts), ("POST", drafts), ("DELETE", drafts + "/7"), ("PUT", drafts + "/7/publish"),
                         ("POST", drafts + "/bulk_publish")):  # extracted (gitlab.json), not hand-written
        op = api_contract.find("gitlab", method, path)
        assert op is not None and op.source == "gitlabhq/gitlabhq", (method, path)
    for method, path in (("GET", GL_MR + "/discussions"), ("PUT", GL_MR + "/discussions/ab12"),
                         ("POST", GL_MR + "/notes"), ("PUT", GL_MR + "/notes/5")):  # not in the description
        op = api_contract.find("gitlab", method, path)
        assert op is not None and op.source.startswith("https://docs.gitlab.com/api/"), (method, path)
    # GitLab gives a user's drafts in one reply: the list takes no page or per_page (the publisher sent per_page)
    assert api_contract.check("gitlab", "GET", drafts, {}, None) == []
    assert "'per_page' is not one" in api_contract.check("gitlab", "GET", drafts, {"per_page": "100"}, None)[0]
    # the page's sample draft: what the description types as integers is null here, a SHA or hex id elsewhere
    sample = {"id": 5, "author_id": 23, "merge_request_id": 11, "resolve_discussion": False, "discussion_id": None,
              "note": "Example title", "commit_id": None, "line_code": None,
              "position": {"base_sha": None, "position_type": "text", "new_line": None, "line_range": None}}
    assert api_contract.check_reply("gitlab", "GET", drafts, 200, [sample]) == []
    replying = {**sample, "discussion_id": "ab" * 20, "commit_id": "c" * 40, "line_code": "1c497f_2_4"}
    assert api_contract.check_reply("gitlab", "POST", drafts, 201, replying) == []
    assert any("613 is not of type" in p for p in api_contract.check_reply(  # the description's integer
        "gitlab", "POST", drafts, 201, {**sample, "discussion_id": 613}))
    # the fake's old mistake: a draft with no position has a position object of nulls, not null
    assert any("None is not of type 'object'" in p for p in api_contract.check_reply(
        "gitlab", "GET", drafts, 200, [{**sample, "position": None}]))
    assert any("'body' was unexpected" in p for p in api_contract.check_reply(
        "gitlab", "POST", drafts, 201, {**sample, "body": "x"}))


BB = "/2.0/repositories/team/app/commit/" + "a" * 40 + "/reports/ocr-hook"
BB_REPORT = {"type": "report", "title": "ocr-hook review", "report_type": "BUG", "result": "FAILED",
             "data": [{"title": "Findings", "type": "NUMBER", "value": 2}]}
BB_ONE = {"type": "report_annotation", "external_id": "f1", "annotation_type": "BUG", "severity": "HIGH",
          "path": "app.py", "line": 3, "summary": "x"}


def test_bitbucket_is_checked_against_its_own_description() -> None:
    """Bitbucket Cloud's swagger.v3.json (bitbucket.json), with bitbucket.extra.json's corrections only."""
    for template in (BB, BB + "/annotations", BB + "/annotations/f1", "/2.0/repositories/team/app/src/x/a.py"):
        methods = [m for m in ("GET", "PUT", "POST", "DELETE") if api_contract.find("bitbucket", m, template)]
        assert methods and all(api_contract.find("bitbucket", m, template).source == "coderabbitai/bitbucket"
                               for m in methods), template
    assert api_contract.check("bitbucket", "PUT", BB, {}, BB_REPORT) == []
    assert api_contract.check("bitbucket", "POST", BB + "/annotations", {}, [BB_ONE]) == []
    src = "/2.0/repositories/team/app/src/" + "a" * 40 + "/pkg/sub/app.py"  # {path} holds slashes
    assert api_contract.check("bitbucket", "GET", src, {}, None) == []
    assert api_contract.check("bitbucket", "GET", BB + "/annotations", {"pagelen": "10", "page": "2"}, None) == []


def test_bitbucket_wrong_field_missing_field_and_bad_reply_are_caught() -> None:
    # a wrong field name: Bitbucket Server's `message` for Cloud's `summary`; a report's `reportType`
    assert any("'message' was unexpected" in p for p in api_contract.check(
        "bitbucket", "POST", BB + "/annotations", {}, [{**BB_ONE, "message": "x"}]))
    renamed = {**{k: v for k, v in BB_REPORT.items() if k != "report_type"}, "reportType": "BUG"}
    assert any("'reportType' was unexpected" in p for p in api_contract.check("bitbucket", "PUT", BB, {}, renamed))
    assert any("'SECURITY_SCAN' is not one of" in p for p in api_contract.check(
        "bitbucket", "PUT", BB, {}, {**BB_REPORT, "report_type": "SECURITY_SCAN"}))
    # a missing required field: the description makes every object's `type` required, in requests too
    untyped = api_contract.check("bitbucket", "PUT", BB, {}, {k: v for k, v in BB_REPORT.items() if k != "type"})
    assert len(untyped) == 1 and "'type' is a required property" in untyped[0]
    assert any("0: 'type' is a required" in p for p in api_contract.check(
        "bitbucket", "POST", BB + "/annotations", {}, [{k: v for k, v in BB_ONE.items() if k != "type"}]))
    assert api_contract.check("bitbucket", "POST", BB + "/annotations", {}, [BB_ONE] * 101)[0].startswith(
        f"bitbucket POST {BB}/annotations: body: (top): ")  # maxItems 100 (the message quotes the list)
    assert "[] should be non-empty" in api_contract.check("bitbucket", "POST", BB + "/annotations", {}, [])[0]
    # replies the description does not allow: a report naming its commit, an untyped one, a 201
    assert any("'commit' was unexpected" in p for p in api_contract.check_reply(
        "bitbucket", "PUT", BB, 200, {**BB_REPORT, "uuid": "{u}", "commit": "a" * 40}))
    assert any("'type' is a required" in p for p in api_contract.check_reply(
        "bitbucket", "GET", BB, 200, {k: v for k, v in BB_REPORT.items() if k != "type"}))
    assert any("values/0/line: 0 is less than the minimum of 1" in p for p in api_contract.check_reply(
        "bitbucket", "GET", BB + "/annotations", 200, {"values": [{**BB_ONE, "line": 0}], "page": 1}))
    assert "status 201" in api_contract.check_reply("bitbucket", "POST", BB + "/annotations", 201, [BB_ONE])[0]
    assert "not valid under any" in api_contract.check_reply(  # an error with neither `type` nor `key`
        "bitbucket", "GET", BB, 404, {"error": {"message": "no"}})[0]


def test_bitbucket_corrections_allow_what_the_service_does_and_no_more() -> None:
    """bitbucket.extra.json corrects the description where Bitbucket itself says otherwise: a data value is
    a number, string or boolean (an object only for a LINK), an annotation needs its summary, Code Insights'
    own {key, message, arguments} error, and the pagination of the annotations list."""
    link = {"title": "Job", "type": "LINK", "value": {"text": "the job", "href": "https://ci.example/1"}}
    flag = {"title": "Safe to merge?", "type": "BOOLEAN", "value": False}
    assert api_contract.check("bitbucket", "PUT", BB, {}, {**BB_REPORT, "data": [link, flag]}) == []
    assert api_contract.check("bitbucket", "PUT", BB, {}, {**BB_REPORT, "data": [{"title": "x", "value": [1]}]})
    assert api_contract.check("bitbucket", "PUT", BB, {}, {**BB_REPORT, "data": [
        {"title": "Job", "type": "LINK", "value": {"text": "the job", "url": "https://ci.example/1"}}]})
    assert any("0: 'summary' is a required" in p for p in api_contract.check(  # Bitbucket refuses it: a 400
        "bitbucket", "POST", BB + "/annotations", {}, [{k: v for k, v in BB_ONE.items() if k != "summary"}]))
    keyed = {"key": "report-service.general.bad-request", "message": "no", "arguments": {}}
    assert api_contract.check_reply("bitbucket", "PUT", BB, 400, keyed) == []
    assert api_contract.check_reply("bitbucket", "GET", BB, 404, {"type": "error", "error": {"message": "no"}}) == []
    assert "'limit' is not one" in api_contract.check("bitbucket", "GET", BB + "/annotations", {"limit": "5"}, None)[0]
    # a correction that no longer finds its place fails loudly rather than checking nothing
    described = [{"method": "GET", "path": "/x", "parameters": [], "body": None, "responses": {"200": {}}}]
    with pytest.raises(LookupError, match="nothing there"):
        api_contract._corrected(described, [{"where": ["GET /x responses/404"], "or": {}}], "t.extra.json")
    with pytest.raises(LookupError, match="no such described operation"):
        api_contract._corrected(described, [{"where": ["PUT /x body"], "schema": {}}], "t.extra.json")
