"""A fake Jira site (Cloud's REST v3 and Data Center's v2 issue read), over HTTP on 127.0.0.1, for the
linked-issues check (issue 60).

Its traffic is checked like the fake forges' (tests/fake_forge.py) against tests/api_descriptions/jira.extra.json:
a schema written from Atlassian's REST documentation (each operation names its page), because no package registry
reachable here ships Atlassian's published OpenAPI description of Jira (PyPI and npm searched). DESIGN 17 allows it.
* GET /rest/api/3/issue/{key}?fields=… with `Authorization: Basic base64(email:api token)` (Jira Cloud) → the
  issue {id, key, self, fields}, its description an Atlassian Document Format tree (or null);
* GET /rest/api/2/issue/{key}?fields=… with `Authorization: Bearer PAT` (Jira Data Center's personal access
  token) → the same, its description plain text;
* an unknown key, or one of a project in `hidden` (the account may not browse it), is Jira's 404 {errorMessages:
  ["Issue does not exist or you do not have permission to see it."], errors: {}}; bad credentials 401.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from fake_forge import Answer, FakeForge, Recorded

NOT_VISIBLE = {"errorMessages": ["Issue does not exist or you do not have permission to see it."], "errors": {}}


class FakeJira(FakeForge):
    name = "jira"
    contract = "jira"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.issues: dict[str, dict[str, Any]] = {}  # key → {summary, description (ADF dict, or text)}
        self.hidden: set[str] = set()  # projects the account may not browse
        self.cloud: tuple[str, str] | None = None  # (email, API token) Jira Cloud accepts
        self.personal: str | None = None  # the Data Center personal access token accepted

    def add_issue(self, key: str, summary: str, description: Any) -> None:
        with self.lock:
            self.issues[key] = {"summary": summary, "description": description}

    def auth(self, headers: dict[str, str]) -> str:
        return headers.get("authorization", "")

    def route(self, rec: Recorded, token: str) -> Answer:
        m = re.fullmatch(r"/rest/api/(2|3)/issue/([A-Za-z0-9_-]+)", rec.path)
        if m is None or rec.method != "GET":
            return 404, {"errorMessages": ["null for uri: " + rec.path], "errors": {}}, {}
        version, key = m.groups()
        scheme, _, value = token.partition(" ")
        if version == "3":
            try:
                email, _, secret = base64.b64decode(value).decode().partition(":")
            except ValueError:
                email = secret = ""
            if scheme != "Basic" or self.cloud is None or (email, secret) != self.cloud:
                return 401, {"errorMessages": ["Client must be authenticated to access this resource."],
                             "errors": {}}, {}
        elif scheme != "Bearer" or value != self.personal:
            return 401, {"errorMessages": ["You are not authenticated. Authentication required to perform this "
                                           "operation."], "errors": {}}, {}
        issue = self.issues.get(key.upper())
        if issue is None or key.upper().rsplit("-", 1)[0] in self.hidden:
            return 404, NOT_VISIBLE, {}
        wanted = [f for f in rec.query.get("fields", "").split(",") if f] or list(issue)
        return 200, {"id": str(10000 + len(key)), "key": key.upper(), "self": f"{self.url}{rec.path}",
                     "fields": {k: v for k, v in issue.items() if k in wanted}}, {}
