"""The `rules` setting's entries, parsed from the raw value the settings keep (settings.RawRules).

The settings check only that `rules` is a list of mappings (they sit below guidance and import nothing
of it); this module checks each entry when a run first needs the rules (the guidance plan, the effort
plan), so every bad shape is still a one-line ConfigError naming the key and the layer it came from
(file, environment variable), exactly like any other setting.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ocr_hook.errors import ConfigError
from ocr_hook.settings import RawRules, Settings

RULE_KEYS = ("paths", "instructions", "instructions_file", "ignore_categories", "effort")
# A rule's `effort:` sets the review profile of its paths under `effort: auto` (DESIGN.md section 8).
RULE_EFFORTS = ("quick", "standard", "deep")


class GuidanceRule(NamedTuple):
    """One `rules` entry: guidance (inline or from a file at the trusted revision) for matching paths."""

    number: int  # 1-based position in the list, for messages
    paths: tuple[str, ...]  # gitignore-style globs
    instructions: str | None
    instructions_file: str | None  # repo-relative, read at the trusted revision
    ignore_categories: tuple[str, ...]
    source: str = ""  # the settings layer it came from, for messages
    effort: str | None = None  # quick | standard | deep for its paths under effort: auto

    @property
    def label(self) -> str:
        return f"rules[{self.number}] ({', '.join(self.paths)})"


def rules_of(settings: Settings) -> tuple[GuidanceRule, ...]:
    """The run's rules, parsed (raises ConfigError on the first bad entry)."""
    return parse_rules(settings.rules)


def parse_rules(raw: RawRules) -> tuple[GuidanceRule, ...]:
    if not raw.items:
        return ()
    source = raw.source

    def bad(where: str, problem: str) -> ConfigError:
        return ConfigError(f"{source}: setting 'rules'{where}: {problem}")

    from ocr_hook.changes.globs import check_patterns
    from ocr_hook.findings import Category

    categories = tuple(c.value for c in Category)
    rules = []
    for number, entry in enumerate(raw.items, 1):
        where = f" item {number}"
        unknown = [str(k) for k in entry if k not in RULE_KEYS]
        if unknown:
            raise bad(where, f"unknown key '{unknown[0]}' (known keys: {', '.join(RULE_KEYS)})")
        paths = entry.get("paths")
        if isinstance(paths, str) or not isinstance(paths, list | tuple) or not paths \
                or not all(isinstance(p, str) and p.strip() for p in paths):
            raise bad(where, f"'paths' must be a non-empty list of glob strings, got {paths!r}"[:300])
        problem = check_patterns(list(paths))
        if problem is not None:
            raise bad(where, f"'paths': {problem}")
        has_text, has_file = "instructions" in entry, "instructions_file" in entry
        effort = entry.get("effort")
        if "effort" in entry and effort not in RULE_EFFORTS:
            raise bad(where, f"'effort' must be one of {', '.join(RULE_EFFORTS)}, got {effort!r}"[:300])
        # A rule may only set the effort of its paths; otherwise it brings instructions.
        if has_text == has_file and not (effort and not has_text):
            raise bad(where, "give exactly one of 'instructions' and 'instructions_file'"
                             + (", not both" if has_text else ""))
        text = entry.get("instructions")
        if has_text and (not isinstance(text, str) or not text.strip()):
            raise bad(where, f"'instructions' must be non-empty text, got {text!r}"[:300])
        file = entry.get("instructions_file")
        if has_file:
            file = _repo_path(file)
            if file is None:
                raise bad(where, f"'instructions_file' must be a path inside the repository, got "
                                 f"{entry.get('instructions_file')!r}"[:300])
        ignored = entry.get("ignore_categories", [])
        if not isinstance(ignored, list | tuple) or not all(isinstance(c, str) for c in ignored):
            raise bad(where, f"'ignore_categories' must be a list of categories, got {ignored!r}"[:300])
        wrong = [c for c in ignored if c not in categories]
        if wrong:
            raise bad(where, f"'ignore_categories': unknown category '{wrong[0]}' (one of {', '.join(categories)})")
        rules.append(GuidanceRule(number, tuple(paths), text if has_text else None, file, tuple(ignored), source,
                                  effort))
    return tuple(rules)


def _repo_path(value: Any) -> str | None:
    """A repo-relative '/'-separated path, or None when it is not one (absolute, '..', empty)."""
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        return None
    parts = [p for p in value.replace("\\", "/").split("/") if p not in ("", ".")]
    if value.startswith("/") or not parts or ".." in parts:
        return None
    return "/".join(parts)
