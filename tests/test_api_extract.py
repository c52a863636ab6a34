"""tests/api_descriptions/extract.py reads Bitbucket's description out of a bare git mirror (as
`fetch` gives coderabbitai/bitbucket) at a commit, GitHub's out of the tarball `npm pack
@octokit/openapi` writes, and GitLab's out of a downloaded openapi_v2.yaml, and gives back the operations
the vendored bitbucket.json, github.json and gitlab.json hold: a description with those operations, in a
real scratch repository, a real gzipped tarball or a YAML file, comes back out as exactly those operations,
with the commit or the package and its integrity recorded."""

from __future__ import annotations

import base64
import copy
import hashlib
import importlib.util
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import api_contract
import pytest
import yaml
from gitrepo import commit_all, git, make_repo, write

SWAGGER = "src/cloud/openapi/swagger.v3.json"


def _extract_module() -> Any:
    spec = importlib.util.spec_from_file_location("extract", api_contract.HERE / "extract.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _description(vendored: dict[str, Any], server: str = "https://api.bitbucket.org/2.0") -> dict[str, Any]:
    """An OpenAPI 3 description with the vendored operations, their prose back in, and the report schema
    behind a $ref as in Atlassian's file."""
    paths: dict[str, Any] = {}
    report = None
    for op in copy.deepcopy(vendored["operations"]):
        body = op["body"]
        if op["method"] == "PUT" and op["path"].endswith("{reportId}"):
            report, body = body, {"$ref": "#/components/schemas/report"}
        answer: dict[str, Any] = {"operationId": op["operationId"], "description": "prose, dropped",
                                  "parameters": op["parameters"], "responses": {}}
        if body is not None:
            answer["requestBody"] = {"content": {"application/json": {"schema": body}}, "required": True}
        for status, schema in op["responses"].items():
            answer["responses"][status] = {"description": "x"} if schema is None else {
                "description": "x", "content": {"application/json": {"schema": schema}}}
        paths.setdefault(op["path"], {})[op["method"].lower()] = answer
    return {"openapi": "3.0.0", "info": {"title": "Bitbucket API", "version": "2.0"},
            "servers": [{"url": server}], "paths": paths,
            "components": {"schemas": {"report": report}}}


def test_a_bare_mirror_at_a_commit_gives_back_the_vendored_operations(tmp_path: Path) -> None:
    vendored = json.loads((api_contract.HERE / "bitbucket.json").read_text(encoding="utf-8"))
    work = make_repo(tmp_path / "work")
    write(work, SWAGGER, json.dumps(_description(vendored), indent=2))
    first = commit_all(work, "the description")
    write(work, SWAGGER, json.dumps({"openapi": "3.0.0", "paths": {}}))  # a later commit without them
    commit_all(work, "later")
    bare = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    extract = _extract_module()
    out = extract.extract("bitbucket", bare, first)
    assert out["source"] == {"repository": "coderabbitai/bitbucket", "path": SWAGGER, "commit": first,
                             "upstream": "https://dac-static.atlassian.com/cloud/bitbucket/swagger.v3.json"}
    assert out["basePath"] == "/2.0" and out["dialect"] == "openapi3"
    assert json.dumps(out["operations"], sort_keys=True) == json.dumps(vendored["operations"], sort_keys=True)
    with pytest.raises(KeyError):  # HEAD, the default, has none of them
        extract.extract("bitbucket", bare)
    assert git(bare, "rev-parse", "HEAD").strip() != first


def test_an_npm_tarball_gives_back_the_vendored_github_operations(tmp_path: Path) -> None:
    vendored = json.loads((api_contract.HERE / "github.json").read_text(encoding="utf-8"))
    description = _description(vendored, "https://api.github.com")
    description["info"]["description"] = vendored["source"]["upstream"]
    tgz = tmp_path / "octokit-openapi-9.9.9.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        for name, doc in (("package.json", {"name": "@octokit/openapi", "version": "9.9.9"}),
                          ("generated/api.github.com.json", description)):
            data = json.dumps(doc).encode("utf-8")
            member = tarfile.TarInfo(f"package/{name}")
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    out = _extract_module().extract("github", tgz)
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tgz.read_bytes()).digest()).decode("ascii")
    assert out["source"] == {"repository": "github/rest-api-description", "package": "npm:@octokit/openapi@9.9.9",
                             "integrity": integrity, "path": "generated/api.github.com.json",
                             "upstream": vendored["source"]["upstream"]}
    assert out["basePath"] == "" and out["dialect"] == "openapi3"
    assert json.dumps(out["operations"], sort_keys=True) == json.dumps(vendored["operations"], sort_keys=True)


def test_an_npm_tarball_gives_back_the_vendored_graphql_schema(tmp_path: Path) -> None:
    vendored = json.loads((api_contract.HERE / "github.graphql.json").read_text(encoding="utf-8"))["source"]
    schema = (api_contract.HERE / "github.graphql").read_bytes()
    name, version = vendored["package"].removeprefix("npm:").rsplit("@", 1)
    tgz = tmp_path / "octokit-graphql-schema.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        for member_name, data in (("package.json", json.dumps({"name": name, "version": version, "license": "MIT",
                                                                "repository": "github:octokit/graphql-schema"}
                                                               ).encode("utf-8")),
                                  ("schema.graphql", schema), ("schema.json", b"{}")):
            member = tarfile.TarInfo(f"package/{member_name}")
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    copied, record = _extract_module().vendor_graphql(tgz)
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tgz.read_bytes()).digest()).decode("ascii")
    assert copied == schema  # byte for byte
    assert record["source"] == {**vendored, "integrity": integrity}  # this tarball's; the rest as recorded


def _swagger_gitlab(vendored: dict[str, Any]) -> dict[str, Any]:
    """A Swagger 2.0 description shaped like GitLab's openapi_v2.yaml: the vendored operations at the paths
    the description files them under (`GET /user` as /api/v3/user), parameters in Swagger 2's flat form, a
    request body as the `in: body` parameter named after the operation (the draft note's), replies behind
    $refs into `definitions` (a list's items, as `is_array` writes it), with prose and examples to drop."""
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}

    def ref(schema: dict[str, Any], name: str) -> dict[str, Any]:
        definitions[name] = {**schema, "description": f"{name} model"}
        return {"$ref": f"#/definitions/{name}"}

    for op in copy.deepcopy(vendored["operations"]):
        answer: dict[str, Any] = {"summary": "prose, dropped", "produces": ["application/json"],
                                  "parameters": [{"in": p["in"], "name": p["name"], "required": p["required"],
                                                  "description": "prose", **p["schema"]} for p in op["parameters"]],
                                  "responses": {}, "tags": ["merge_requests"], "operationId": op["operationId"]}
        if op["body"] is not None:
            answer["parameters"].append({"name": op["operationId"], "in": "body", "required": True,
                                         "schema": ref(op["body"], op["operationId"])})
        for status, schema in op["responses"].items():
            if schema is not None and schema.get("type") == "array":
                schema = {"type": "array", "items": ref(schema["items"], f"Entity_{len(definitions)}")}
            elif schema is not None:
                schema = ref(schema, f"Entity_{len(definitions)}")
            answer["responses"][status] = {"description": "x", **({"schema": schema} if schema else {})}
        paths.setdefault(op.get("describedAs", op["path"]), {})[op["method"].lower()] = answer
    return {"info": {"title": "GitLab API", "version": "v4"}, "swagger": "2.0", "host": "gitlab.com",
            "paths": paths, "definitions": definitions}


def test_a_downloaded_openapi_v2_yaml_gives_back_the_vendored_gitlab_operations(tmp_path: Path) -> None:
    vendored = json.loads((api_contract.HERE / "gitlab.json").read_text(encoding="utf-8"))
    assert {op["path"] for op in vendored["operations"]} >= {"/api/v4/user"}  # served at v4, filed under v3
    kept = {(op["method"], op["path"].rsplit("merge_requests/{merge_request_iid}", 1)[-1])
            for op in vendored["operations"]}
    assert kept >= {("GET", "/draft_notes"), ("POST", "/draft_notes"), ("DELETE", "/draft_notes/{draft_note_id}"),
                    ("PUT", "/draft_notes/{draft_note_id}/publish"), ("POST", "/draft_notes/bulk_publish")}
    assert any(op["body"] for op in vendored["operations"]) and any(  # a body and a list reply go through too
        (op["responses"].get("200") or {}).get("type") == "array" for op in vendored["operations"])
    spec = tmp_path / "openapi_v2.yaml"
    spec.write_text(yaml.safe_dump(_swagger_gitlab(vendored), sort_keys=False), encoding="utf-8")
    extract = _extract_module()
    commit = vendored["source"]["commit"]
    out = extract.extract("gitlab", spec, commit)
    assert out["source"] == {"repository": "gitlabhq/gitlabhq", "path": "doc/api/openapi/openapi_v2.yaml",
                             "commit": commit}
    assert out["basePath"] == "" and out["dialect"] == "swagger2"  # the paths carry /api/v4 themselves
    assert json.dumps(out["operations"], sort_keys=True) == json.dumps(vendored["operations"], sort_keys=True)
    with pytest.raises(SystemExit) as refused:  # one downloaded file: the commit it came from must be named
        extract.extract("gitlab", spec)
    assert refused.value.code == 2
