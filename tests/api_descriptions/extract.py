"""Extract the operations ocr-hook calls from a forge's official API description into a small JSON file.

    python tests/api_descriptions/extract.py azure /path/to/clone/of/vsts-rest-api-specs
    python tests/api_descriptions/extract.py github octokit-openapi-VERSION.tgz   # npm pack @octokit/openapi@VERSION
    python tests/api_descriptions/extract.py gitea /path/to/v1_json.tmpl COMMIT
    python tests/api_descriptions/extract.py bitbucket /path/to/git/dir/of/coderabbitai/bitbucket [COMMIT]

The Gitea description is one file of a repository too large to clone for it; download it at a commit,
    curl -o v1_json.tmpl https://raw.githubusercontent.com/go-gitea/gitea/COMMIT/templates/swagger/v1_json.tmpl
and name that commit (it is recorded as given). The file is a Go template: its `{{AppSubUrl | JSEscape}}`
markers (in basePath and the version) are removed before it is read, as a server at the root renders it.

Atlassian publishes Bitbucket Cloud's description at one URL (UPSTREAM below), with no history of its own;
the public repository coderabbitai/bitbucket vendors it. Give a clone, or a bare mirror of it (read with
`git show COMMIT:PATH`; COMMIT defaults to HEAD), or the downloaded file and the commit it was taken at.
An OpenAPI 3 description's base path is its first server's path (Bitbucket's https://api.bitbucket.org/2.0).

GitHub's own repository is over the mirror's size limit; the npm package @octokit/openapi ships its
description, generated from it. Its generator adds the `x-octokit` extension (dropped here) and overrides a
handful of operations, none of those listed below; it records no upstream commit. Give the tarball `npm pack`
wrote (or the unpacked directory): its name and version are recorded instead of a commit, with the
upstream the description names and, from a tarball, npm's sha512 integrity of it, which `npm view
@octokit/openapi@VERSION dist.integrity` confirms.

It reads the description at its path in the clone, or in the registry package (Swagger 2.0 or OpenAPI 3,
JSON or YAML), keeps only the operations listed in OPERATIONS below, resolves every $ref they need (a
cycle becomes `{}`, open), drops the prose, and writes tests/api_descriptions/<forge>.json with the source
repository, path and commit (`git -C CLONE rev-parse HEAD`). tests/api_contract.py validates the fakes'
traffic against those files. Operations a description lacks are written down by hand in
<forge>.extra.json, each with the page of the REST documentation it comes from; this script never touches
those.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

HERE = Path(__file__).resolve().parent

SOURCES: dict[str, dict[str, str]] = {
    "azure": {"repository": "MicrosoftDocs/vsts-rest-api-specs", "path": "specification/git/7.1/git.json"},
    "github": {"repository": "github/rest-api-description",
               "path": "descriptions/api.github.com/api.github.com.json",
               # from the npm package @octokit/openapi (see above): the path inside it
               "package_path": "generated/api.github.com.json"},
    "gitea": {"repository": "go-gitea/gitea", "path": "templates/swagger/v1_json.tmpl"},  # a downloaded file
    "gitlab": {"repository": "gitlabhq/gitlabhq", "path": "doc/api/openapi/openapi_v2.yaml"},
    "bitbucket": {"repository": "coderabbitai/bitbucket", "path": "src/cloud/openapi/swagger.v3.json",
                  "upstream": "https://dac-static.atlassian.com/cloud/bitbucket/swagger.v3.json"},
}

_AZ = "/{organization}/{project}/_apis/git/repositories/{repositoryId}"
_AZ_PR = _AZ + "/pullRequests/{pullRequestId}"
_BB_REPORT = "/repositories/{workspace}/{repo_slug}/commit/{commit}/reports/{reportId}"
OPERATIONS: dict[str, list[tuple[str, str]]] = {
    "azure": [("GET", _AZ + "/items"), ("GET", _AZ_PR + "/iterations"),
              ("GET", _AZ_PR + "/iterations/{iterationId}/changes"), ("GET", _AZ_PR + "/threads"),
              ("POST", _AZ_PR + "/threads"), ("PATCH", _AZ_PR + "/threads/{threadId}"),
              ("PATCH", _AZ_PR + "/threads/{threadId}/comments/{commentId}"),
              ("GET", _AZ_PR + "/statuses"), ("POST", _AZ_PR + "/statuses")],
    "github": [("GET", "/user"), ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/files"),
               ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/comments"),
               ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"),
               ("POST", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"),
               ("POST", "/repos/{owner}/{repo}/code-scanning/sarifs")],
    "gitea": [("GET", "/user"), ("GET", "/repos/{owner}/{repo}/pulls/{index}.{diffType}"),
              ("GET", "/repos/{owner}/{repo}/pulls/{index}/reviews"),
              ("POST", "/repos/{owner}/{repo}/pulls/{index}/reviews"),
              ("GET", "/repos/{owner}/{repo}/pulls/{index}/reviews/{id}/comments")],
    "gitlab": [],
    # what the publisher calls (DELETE and PUT the report, POST annotations, GET src) and what the fake also
    # answers for the tests (GET the report and its annotations, DELETE one annotation)
    "bitbucket": [("PUT", _BB_REPORT), ("GET", _BB_REPORT), ("DELETE", _BB_REPORT),
                  ("GET", _BB_REPORT + "/annotations"), ("POST", _BB_REPORT + "/annotations"),
                  ("DELETE", _BB_REPORT + "/annotations/{annotationId}"),
                  ("GET", "/repositories/{workspace}/{repo_slug}/src/{commit}/{path}")],
}
_PROSE = {"description", "summary", "example", "examples", "x-ms-docs-override-version", "externalDocs",
          "x-github", "x-ms-examples", "title", "x-octokit", "x-go-name", "x-go-package",
          "x-bb-default-fields", "x-bb-url"}
_TEMPLATE_MARKER = re.compile(r"\{\{[^{}]*\}\}")  # Gitea's v1_json.tmpl: {{AppSubUrl | JSEscape}}


def _git_commit(clone: Path) -> str:
    return _git(clone, "rev-parse", "HEAD").strip()


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                          encoding="utf-8").stdout


def _is_bare(root: Path) -> bool:
    done = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-bare-repository"], capture_output=True,
                          text=True)
    return done.returncode == 0 and done.stdout.strip() == "true"


def _load(path: Path, text: str | None = None) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8-sig") if text is None else text.removeprefix("\ufeff")
    if path.suffix == ".tmpl":
        text = _TEMPLATE_MARKER.sub("", text)
    return json.loads(text) if path.suffix in (".json", ".tmpl") else yaml.safe_load(text)


def _resolve(doc: dict[str, Any], node: Any, seen: tuple[str, ...] = ()) -> Any:
    if isinstance(node, list):
        return [_resolve(doc, x, seen) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        ref = node["$ref"]
        if ref in seen or len(seen) > 6:  # a cycle (or a very deep tree): left open
            return {}
        target: Any = doc
        for part in ref.lstrip("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        return _resolve(doc, target, (*seen, ref))
    out = {k: _resolve(doc, v, seen) for k, v in node.items() if k not in _PROSE}
    if isinstance(node.get("properties"), dict):  # a property may be called "description"
        out["properties"] = {k: _resolve(doc, v, seen) for k, v in node["properties"].items()}
    return out


def _parameter(doc: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    p = _resolve(doc, p)
    schema = p.get("schema") or {k: v for k, v in p.items()
                                 if k in ("type", "format", "enum", "items", "default", "minimum", "maximum")}
    return {"name": p["name"], "in": p["in"], "required": bool(p.get("required")), "schema": schema}


def _operation(doc: dict[str, Any], method: str, template: str) -> dict[str, Any]:
    item = doc["paths"][template]
    op = item[method.lower()]
    params = [_parameter(doc, p) for p in [*item.get("parameters", []), *op.get("parameters", [])]]
    body = None
    if "requestBody" in op:  # OpenAPI 3
        content = _resolve(doc, op["requestBody"]).get("content", {})
        body = (content.get("application/json") or next(iter(content.values()), {})).get("schema")
    for p in [*item.get("parameters", []), *op.get("parameters", [])]:
        p = _resolve(doc, p)
        if p.get("in") == "body":  # Swagger 2
            body = p.get("schema")
    responses: dict[str, Any] = {}
    for status, answer in op.get("responses", {}).items():
        answer = _resolve(doc, answer)
        if "content" in answer:
            content = answer["content"]
            responses[str(status)] = (content.get("application/json") or next(iter(content.values()))).get("schema")
        else:
            responses[str(status)] = answer.get("schema")
    return {"method": method, "path": template, "operationId": op.get("operationId", ""),
            "parameters": [p for p in params if p["in"] in ("path", "query")], "body": _resolve(doc, body),
            "responses": responses}


def _source(forge: str, root: Path, commit: str | None = None) -> tuple[dict[str, str], Path, str | None]:
    """Where the description is and what to record of it: a clone's commit, a package's name@version, the
    commit a single downloaded file was taken at, or the commit of a bare mirror it is read from (with the
    text then, as a bare repository has no file to open)."""
    source = {k: v for k, v in SOURCES[forge].items() if k != "package_path"}
    if root.is_dir() and not (root / source["path"]).exists() and _is_bare(root):
        resolved = _git(root, "rev-parse", "--verify", f"{commit or 'HEAD'}^{{commit}}").strip()
        text = _git(root, "show", f"{resolved}:{source['path']}")
        return {**source, "commit": resolved}, Path(source["path"]), text
    if root.is_file() and root.name.endswith(".tgz") and "package_path" in SOURCES[forge]:
        data = root.read_bytes()
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            def member(name: str) -> str:
                handle = tar.extractfile(f"package/{name}")
                assert handle is not None, name
                return handle.read().decode("utf-8")
            package, text = json.loads(member("package.json")), member(SOURCES[forge]["package_path"])
        path = Path(SOURCES[forge]["package_path"])
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")
        return {"repository": source["repository"], "package": f"npm:{package['name']}@{package['version']}",
                "integrity": integrity, "path": SOURCES[forge]["package_path"],
                "upstream": _load(path, text).get("info", {}).get("description", "")}, path, text
    if root.is_file():
        if not commit or not re.fullmatch(r"[0-9a-f]{40}", commit):
            print(f"extract.py: {root} is one file: name the 40-hex commit it was downloaded at", file=sys.stderr)
            raise SystemExit(2)
        return {**source, "commit": commit}, root, None
    manifest = root / "package.json"
    if manifest.exists() and "package_path" in SOURCES[forge]:
        package = json.loads(manifest.read_text(encoding="utf-8"))
        path = root / SOURCES[forge]["package_path"]
        info = _load(path).get("info", {})
        return {"repository": source["repository"], "package": f"npm:{package['name']}@{package['version']}",
                "path": SOURCES[forge]["package_path"], "upstream": info.get("description", "")}, path, None
    return {**source, "commit": _git_commit(root)}, root / source["path"], None


def extract(forge: str, root: Path, commit: str | None = None) -> dict[str, Any]:
    source, path, text = _source(forge, root, commit)
    doc = _load(path, text)
    base = doc.get("basePath") if "basePath" in doc else urlsplit((doc.get("servers") or [{}])[0].get("url", "")).path
    return {"source": source,
            "dialect": "swagger2" if "swagger" in doc else "openapi3",
            "basePath": (base or "").rstrip("/"),
            "operations": [_operation(doc, m, t) for m, t in OPERATIONS[forge]]}


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[0] not in SOURCES:
        print(f"usage: extract.py {{{','.join(SOURCES)}}} PATH_OF_A_LOCAL_CLONE_OR_PACKAGE_OR_FILE [COMMIT]",
              file=sys.stderr)
        return 2
    out = HERE / f"{argv[0]}.json"
    doc = extract(argv[0], Path(argv[1]), argv[2] if len(argv) == 3 else None)
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {out} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
