"""Effort per file (DESIGN.md section 8): how deep each file's review goes, decided before the agent runs.

`effort: auto` picks `quick` when a git hook runs the review (pre-commit, prek, lefthook, husky or a plain
hook: ocr_hook.hookenv) and `standard` in CI and elsewhere; a file on a risky path (`risk_paths`) is raised
one level, and a `rules:` entry with `effort:` sets its paths'
profile. An explicit `quick`, `standard` or `deep` applies to every file as it is.

Pure: settings and the environment in, one Profile per path out. The agent reads the Profile; the
reports show its name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from ocr_hook import config_files
from ocr_hook.errors import ConfigError
from ocr_hook.settings import Settings

if TYPE_CHECKING:
    from ocr_hook.changes.globs import GitIgnoreGlobs

PROFILES = ("quick", "standard", "deep")
EFFORT_CHOICES = ("auto", *PROFILES)
QUICK_MAX_ROUNDS = 8


class Profile(NamedTuple):
    """What one profile does to a file's review (the table of DESIGN.md section 8)."""

    name: str
    output_effort: str  # the API's output_config.effort, where the model supports it
    thinking: bool  # adaptive thinking, where the model supports it
    plan: str  # "never" | "threshold" (from plan_threshold changed lines) | "always"
    max_rounds_cap: int | None
    filter_all: bool  # False: the review filter runs only when a comment is at or above fail_on
    why: str = ""  # how auto chose it, for preview ("risky path", "rules[2]", …); empty when explicit

    def max_rounds(self, configured: int) -> int:
        return configured if self.max_rounds_cap is None else min(configured, self.max_rounds_cap)

    @property
    def label(self) -> str:
        return f"{self.name} ({self.why})" if self.why else self.name


_TABLE = {
    "quick": Profile("quick", "low", False, "never", QUICK_MAX_ROUNDS, False),
    "standard": Profile("standard", "medium", True, "threshold", None, True),
    "deep": Profile("deep", "high", True, "always", None, True),
}


def profile(name: str, why: str = "") -> Profile:
    base = _TABLE[name]
    return base if not why else Profile(base.name, base.output_effort, base.thinking, base.plan,
                                        base.max_rounds_cap, base.filter_all, why)


def raised(name: str) -> str:
    return PROFILES[min(PROFILES.index(name) + 1, len(PROFILES) - 1)]


def auto_base(environ: Mapping[str, str]) -> tuple[str, str]:
    """The profile auto starts from, and why: quick when a git hook runs the review (ocr_hook.hookenv)."""
    from ocr_hook.hookenv import commit_time, why_commit_time

    if commit_time(environ):
        return "quick", why_commit_time(environ)
    if environ.get("CI", "").lower() == "true":
        return "standard", "CI"
    return "standard", ""


class EffortPlan:
    """The profile of every path of one run."""

    def __init__(self, settings: Settings, environ: Mapping[str, str]) -> None:
        self._effort = settings.effort
        self._base, self._base_why = auto_base(environ)
        self._rules = []
        if settings.rules:
            from ocr_hook.guidance.rules import rules_of

            self._rules = [(rule, rule.effort) for rule in rules_of(settings) if rule.effort]
        self._risk = None
        if settings.risk_paths and self._effort == "auto":
            from ocr_hook.changes.globs import GitIgnoreGlobs, check_patterns

            # The user's globs are checked here, not when the settings load (the idle path must not
            # load pathspec); the shipped ones are known to be valid, and a cached run compiles none.
            shipped = set(config_files.read_yaml("defaults.yaml")["risk_paths"])
            problem = check_patterns([p for p in settings.risk_paths if p not in shipped])
            if problem is not None:
                raise ConfigError(f"setting 'risk_paths': {problem}")
            self._risk = GitIgnoreGlobs(settings.risk_paths)
        self._rule_globs: dict[int, GitIgnoreGlobs] = {}

    def _rule_effort(self, path: str) -> tuple[str, str] | None:
        """The effort of the last `rules:` entry with an `effort:` whose paths match (later entries win,
        as with the other rule settings)."""
        from ocr_hook.changes.globs import GitIgnoreGlobs

        found = None
        for rule, effort in self._rules:
            globs = self._rule_globs.get(rule.number)
            if globs is None:
                globs = self._rule_globs[rule.number] = GitIgnoreGlobs(rule.paths)
            if globs.check_file(path).include:
                found = (effort, f"rules[{rule.number}]")
        return found

    def risky(self, path: str) -> bool:
        return self._risk is not None and bool(self._risk.check_file(path).include)

    def for_path(self, path: str) -> Profile:
        if self._effort != "auto":
            return profile(self._effort)
        ruled = self._rule_effort(path)
        if ruled is not None:
            return profile(*ruled)
        if self.risky(path):
            return profile(raised(self._base), "risky path")
        return profile(self._base, self._base_why)


def profiles_for(paths: Iterable[str], settings: Settings, environ: Mapping[str, str]) -> dict[str, Profile]:
    plan = EffortPlan(settings, environ)
    return {path: plan.for_path(path) for path in paths}
