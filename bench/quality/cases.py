"""The case format (JSONL, one real bug fix a line) and the proposer that finds candidate fixes in a clone.

A case is a fix commit of a real project. The benchmark stages the fix *reversed*, so the change under
review re-introduces a bug the project really had. Golden ranges are on the new side of that reversed
change: the lines the fix touched, as they read in the buggy version (the fix's parent).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from unidiff import PatchSet

from .gitcmd import git, reversed_diff

CATEGORIES = ("logic", "missing-check", "resource", "concurrency", "security", "error-handling")
LANGUAGES = {".py": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
             ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescript",
             ".jsx": "javascript"}
MAX_SOURCE_FILES = 3
MAX_CHANGED_LINES = 40

_TEST_PATH = re.compile(r"(^|/)(tests?|__tests__|spec|testing|fixtures?)/|(^|/)test_[^/]*$|_test\.py$|"
                        r"\.(test|spec)\.[cm]?[jt]sx?$|(^|/)conftest\.py$")
_NOT_SOURCE = re.compile(r"(^|/)(docs?|examples?|benchmarks?|scripts?)/|\.d\.ts$|(^|/)setup\.py$")
_FIX_WORDS = re.compile(r"\b(fix(es|ed|ing)?|bug|crash(es)?|leak(s|ing)?|race|deadlock|hang(s|ing)?|"
                        r"overflow|vulnerab\w*|cve|security|inject\w*|travers\w*|redos|pollution|"
                        r"regression|incorrect(ly)?|wrong(ly)?|broken|prevent|missing)\b", re.I)
_NOT_A_FIX = re.compile(r"\b(typo|docs?|documentation|readme|changelog|release|bump|lint|flake8|mypy|"
                        r"format(ting)?|style|ci|workflow|deprecat\w*|refactor|rename|version)\b", re.I)
_CATEGORY_WORDS = [
    ("concurrency", re.compile(r"\b(race|thread\w*|lock(s|ing)?|concurren\w*|async\w*|await|deadlock|"
                               r"parallel|atomic\w*)\b", re.I)),
    ("security", re.compile(r"\b(security|cve|vulnerab\w*|inject\w*|travers\w*|xss|redos|pollution|"
                            r"leak(s|ing)? (credentials?|auth\w*|headers?|cookies?)|proxy-authorization|"
                            r"authorization|sanitiz\w*|escap\w*|open redirect)\b", re.I)),
    ("resource", re.compile(r"\b(leak(s|ing)?|close[sd]?|closing|file handle|socket|connection pool|"
                            r"release[sd]?|cleanup|dispose|memory|stream)\b", re.I)),
    ("missing-check", re.compile(r"\b(missing|check\w*|validat\w*|none|null|undefined|empty|guard|"
                                 r"bounds?|negative|zero)\b", re.I)),
]


@dataclass
class Golden:
    """Lines of one file in the buggy version (1-based, inclusive) that the fix touched."""

    path: str
    start: int
    end: int


@dataclass
class Case:
    id: str
    repo: str  # https URL of the project
    fix_commit: str
    files: list[str]  # source files the fix touched (tests excluded): the reviewed change
    golden: list[Golden]
    description: str  # the fix commit's subject and body
    language: str
    category: str
    test_files: list[str] = field(default_factory=list)  # the fix's test changes, left out of the review

    @property
    def slug(self) -> str:
        """owner+name, the directory name a mirror of the project has under --repos."""
        owner, name = self.repo.rstrip("/").removesuffix(".git").split("/")[-2:]
        return f"{owner}+{name}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Case:
        values = dict(data)
        golden = values.pop("golden", [])
        if not isinstance(golden, list):
            raise ValueError("golden must be a list")
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown keys {sorted(unknown)}")
        return cls(golden=[Golden(**g) for g in golden], **values)  # type: ignore[arg-type]


class CaseFileError(Exception):
    pass


def load_cases(path: Path) -> list[Case]:
    cases: list[Case] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            cases.append(Case.from_dict(json.loads(line)))
        except (ValueError, TypeError) as exc:
            raise CaseFileError(f"{path}:{number}: not a case ({exc})") from None
    ids = [c.id for c in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise CaseFileError(f"{path}: duplicate case ids {', '.join(duplicates)}")
    return cases


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def language_of(path: str) -> str | None:
    return LANGUAGES.get(Path(path).suffix)


def golden_ranges(repo: Path | str, fix: str, files: list[str]) -> list[Golden]:
    """The new side of the reversed fix: every hunk's lines in the buggy version. A fix that only added
    lines reverses to a deletion, whose range is the lines on either side of the gap."""
    ranges: list[Golden] = []
    for patched in PatchSet(reversed_diff(repo, fix, files)):
        path = patched.path
        for hunk in patched:
            if hunk.target_length > 0:
                ranges.append(Golden(path, hunk.target_start, hunk.target_start + hunk.target_length - 1))
            else:  # git puts target_start on the line before the removed lines
                ranges.append(Golden(path, max(1, hunk.target_start), hunk.target_start + 1))
    return ranges


def guess_category(message: str) -> str:
    for name, words in _CATEGORY_WORDS:
        if words.search(message):
            return name
    return "logic"


@dataclass
class _Commit:
    sha: str
    subject: str
    body: str
    numstat: list[tuple[int, int, str]]


def _commits(repo: Path | str, rev: str) -> Iterator[_Commit]:
    out = git(repo, "log", "--no-merges", "--no-renames", "--numstat", "--format=%x1e%H%x1f%s%x1f%b%x1f", rev)
    for record in out.split("\x1e")[1:]:
        sha, subject, body, stats = record.split("\x1f", 3)
        numstat: list[tuple[int, int, str]] = []
        for line in stats.strip().splitlines():
            added, deleted, path = line.split("\t", 2)
            if added == "-":  # binary
                numstat.append((10**6, 0, path))
            else:
                numstat.append((int(added), int(deleted), path))
        yield _Commit(sha, subject.strip(), body.strip(), numstat)


def case_for(repo: Path | str, url: str, sha: str) -> Case | None:
    """The case for one hand-picked commit (no message or size heuristics); None without a source change."""
    full = git(repo, "rev-parse", "--verify", f"{sha}^{{commit}}").strip()
    commit = next(_commits(repo, f"{full}^!"), None)
    return None if commit is None else _case(repo, url, commit)


def _case(repo: Path | str, url: str, commit: _Commit) -> Case | None:
    message = f"{commit.subject}\n{commit.body}"
    tests = [p for _, _, p in commit.numstat if is_test_path(p)]
    files = [p for _, _, p in commit.numstat if not is_test_path(p) and language_of(p) and not _NOT_SOURCE.search(p)]
    golden = golden_ranges(repo, commit.sha, files) if files else []
    if not golden:
        return None
    name = url.rstrip("/").removesuffix(".git").split("/")[-1]
    languages = sorted({x for x in (language_of(p) for p in files) if x})
    return Case(id=f"{name}-{commit.sha[:8]}", repo=url, fix_commit=commit.sha, files=files, golden=golden,
                description=message.strip(), language=languages[0], category=guess_category(message),
                test_files=tests)


def propose(repo: Path | str, url: str, rev: str = "HEAD", limit: int | None = None) -> Iterable[Case]:
    """Candidate cases: fix-like messages, 1-3 source files, 1-40 changed source lines, tests excluded.
    A person reads every candidate (`git show SHA`) before accepting it."""
    found = 0
    for commit in _commits(repo, rev):
        if not _FIX_WORDS.search(commit.subject) or _NOT_A_FIX.search(commit.subject):
            continue
        source = [(a, d, p) for a, d, p in commit.numstat
                  if not is_test_path(p) and language_of(p) and not _NOT_SOURCE.search(p)]
        if not source or len(source) > MAX_SOURCE_FILES:
            continue
        changed = sum(a + d for a, d, _ in source)
        if not 1 <= changed <= MAX_CHANGED_LINES:
            continue
        case = _case(repo, url, commit)
        if case is None:
            continue
        found += 1
        yield case
        if limit is not None and found >= limit:
            return
