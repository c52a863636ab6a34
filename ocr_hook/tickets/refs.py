"""Finding the tickets a change names, in its title, body, branch name and commit messages. Pure.

What is recognised (docs/tickets.md lists it for users):
- GitHub, Gitea: `#12`, `owner/repo#12`, the forge's issue URLs (`{web_root}/owner/repo/issues/12`);
- GitLab: `#12`, `group/sub/project#12`, `{web_root}/group/project/-/issues/12`;
- Azure DevOps: `AB#77` and `{web_root}/.../_workitems/edit/77`;
- GitHub, GitLab, Gitea: a number at the start of the branch name or right after a `/` (`12-fix-login`,
  `feature/12-login`);
- Jira (any forge, Bitbucket's only kind): `ABC-123`, only for the projects `tickets.jira.projects` lists
  (`SHA-256`, `UTF-8` and `ISO-8601` look like keys too).
References are taken title first, then body, branch, commit messages, each in reading order; the same ticket
named twice counts once (its first place); at most `limit` are returned. The forge's own closing references
come before all of these, and are the adapter's to add (publish/forges.py, `linked_tickets`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from ocr_hook.tickets.model import Reference

FORGE_SOURCE = {"github": "github", "gitlab": "gitlab", "gitea": "gitea", "azure": "azure"}  # bitbucket: Jira only
_BRANCH_NUMBERS = ("github", "gitlab", "gitea")

# `#12` not inside a word, a path, an HTML entity (`&#12;`) or an Azure `AB#12`
_SHORT = re.compile(r"(?<![\w/&#.-])#(\d{1,9})\b")
_GITHUB_FULL = re.compile(r"(?<![\w./-])([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#(\d{1,9})\b")
_GITLAB_FULL = re.compile(r"(?<![\w./-])([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+)#(\d{1,9})\b")
_AZURE = re.compile(r"(?<![\w])AB#(\d{1,9})\b")
_BRANCH = re.compile(r"(?:^|/)(\d{1,9})(?=$|[-_./])")
_JIRA = re.compile(r"(?<![\w-])([A-Z][A-Z0-9_]{0,49})-(\d{1,9})\b")


class Texts(NamedTuple):
    """What a change says about itself: the request's title and body, its branch, its commits' messages."""

    title: str = ""
    body: str = ""
    branch: str = ""
    commits: tuple[str, ...] = ()


def find(texts: Texts, forge: str, *, repo: str = "", web_root: str = "", jira_projects: Sequence[str] = (),
         limit: int = 5) -> tuple[Reference, ...]:
    """The references in `texts`, for `forge` (github | gitlab | gitea | azure | bitbucket | "" for none) and
    for Jira when `jira_projects` lists any. `repo`: this repository's path on the forge ("owner/name",
    "group/project"), so a full reference to it is the same ticket as `#N`; `web_root`: the forge's web
    address (`https://github.com`), whose issue URLs are references (no other site's are)."""
    seen: set[tuple[str, str | None, str]] = set()
    out: list[Reference] = []
    projects = frozenset(p.strip().upper() for p in jira_projects if p.strip())
    parts = [("title", texts.title), ("body", texts.body), ("branch", texts.branch)]
    parts += [("commit", message) for message in texts.commits]
    for origin, text in parts:
        if not text:
            continue
        found = list(_forge_refs(text, origin, forge, repo, web_root))
        if projects:
            found += _jira_refs(text, origin, projects)
        for position, ref in sorted(found, key=lambda item: item[0]):
            del position
            ident = identity(ref)
            if ident not in seen:
                seen.add(ident)
                out.append(ref)
                if len(out) >= limit:
                    return tuple(out)
    return tuple(out)


def identity(ref: Reference) -> tuple[str, str | None, str]:
    """What makes two references the same ticket (forge paths are case-insensitive, Jira keys upper case)."""
    repo = None if ref.repo is None else ref.repo.lower()
    return ref.source, repo, str(ref.number) if ref.number else ref.key.upper()


def _same_repo(path: str, repo: str) -> bool:
    return bool(repo) and path.strip("/").lower() == repo.strip("/").lower()


def _numbered(source: str, path: str | None, number: str, repo: str, origin: str) -> Reference:
    if path is None or _same_repo(path, repo):
        return Reference(source, f"#{int(number)}", None, int(number), origin)
    return Reference(source, f"{path}#{int(number)}", path, int(number), origin)


def _forge_refs(text: str, origin: str, forge: str, repo: str, web_root: str) -> Iterable[tuple[int, Reference]]:
    source = FORGE_SOURCE.get(forge)
    if source is None:
        return
    if origin == "branch":
        if forge in _BRANCH_NUMBERS:
            for m in _BRANCH.finditer(text):
                yield m.start(1), _numbered(source, None, m.group(1), repo, origin)
        return
    if source == "azure":
        for m in _AZURE.finditer(text):
            yield m.start(), Reference(source, f"AB#{int(m.group(1))}", None, int(m.group(1)), origin)
        if web_root:
            url = re.compile(re.escape(web_root.rstrip("/")) + r"/(?:[^\s/]+/)*_workitems/edit/(\d{1,9})\b")
            for m in url.finditer(text):
                yield m.start(), Reference(source, f"AB#{int(m.group(1))}", None, int(m.group(1)), origin)
        return
    for m in _SHORT.finditer(text):
        yield m.start(), _numbered(source, None, m.group(1), repo, origin)
    for m in (_GITLAB_FULL if source == "gitlab" else _GITHUB_FULL).finditer(text):
        if "://" not in text[max(0, m.start() - 12):m.start() + 1]:
            yield m.start(), _numbered(source, m.group(1), m.group(2), repo, origin)
    if web_root:
        middle = "/-/issues/" if source == "gitlab" else "/issues/"
        path = r"([^\s/]+(?:/[^\s/]+)+)" if source == "gitlab" else r"([^\s/]+/[^\s/]+)"
        url = re.compile(re.escape(web_root.rstrip("/")) + "/" + path + re.escape(middle) + r"(\d{1,9})\b")
        for m in url.finditer(text):
            yield m.start(), _numbered(source, m.group(1), m.group(2), repo, origin)


def _jira_refs(text: str, origin: str, projects: frozenset[str]) -> Iterable[tuple[int, Reference]]:
    for m in _JIRA.finditer(text):
        if m.group(1) in projects:
            yield m.start(), Reference("jira", f"{m.group(1)}-{int(m.group(2))}", None, None, origin)
