"""Settings: shipped defaults < .ocr-hook.yaml (or --config) < OCR_HOOK_* env < command-line flags."""

import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

import yaml

from ocr_hook import config_files
from ocr_hook.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

REPO_CONFIG_NAME = ".ocr-hook.yaml"

CHOICES: dict[str, tuple[str, ...]] = {
    "fail_on": ("critical", "high", "medium", "low", "never"),
    "on_error": ("fail", "warn"),
    "format": ("text", "json", "sarif", "github", "gitlab"),
    "filter_mode": ("added", "diff_context", "file", "nofilter"),
    "provider": ("auto", "anthropic", "bedrock", "vertex", "claude-code"),
    "effort": ("auto", "quick", "standard", "deep"),  # DESIGN.md section 8 (ocr_hook.effort)
    "late_findings": ("advisory", "block"),
    "change_exemptions": ("allow", "block"),  # issue 58: what a change does to exempt its own code
    "warm": ("auto", "on", "off"),  # DESIGN.md section 14 (ocr_hook.warm)
    "summary_below": ("critical", "high", "medium", "low"),  # DESIGN.md 18: publishing's routing
}
# The categories summary_categories may name (ocr_hook.findings.model.Category, not imported: settings sit below it).
CATEGORIES = ("bug", "security", "performance", "maintainability", "test", "style", "documentation", "other")
PRICE_KEYS = ("input", "output", "cache_write", "cache_read")


class RawRules(NamedTuple):
    """The `rules` setting as written (a list of mappings) and the layer it came from.

    Only its outer shape is checked here; ocr_hook.guidance.rules parses the entries (globs, categories,
    efforts) when a run needs them, so the settings, at the bottom of the flow, import nothing above them,
    and a run with nothing to review never compiles a rule's globs. (A NamedTuple, not a dataclass: every
    run creates this class, and a dataclass costs about a millisecond more to create.)
    """

    items: tuple[Mapping[str, Any], ...] = ()
    source: str = ""

    def __bool__(self) -> bool:
        return bool(self.items)


class RepoFile(NamedTuple):
    """The repository's settings file as a review of a range reads it: at the trusted revision (DESIGN.md 5),
    not in the work tree that the change controls. `text` None: the revision has no such file."""

    text: str | None
    revision: str  # how the notes and errors name the revision


class Price(NamedTuple):
    """USD per million tokens of one model."""

    input: float
    output: float
    cache_write: float
    cache_read: float


class JiraSettings(NamedTuple):
    """`tickets.jira`: the one Jira site tickets are read from, and the projects whose keys count (issue 60)."""

    url: str  # https://example.atlassian.net (from the trusted settings only, never from a pull request)
    projects: tuple[str, ...]  # ABC, OPS: `SHA-256` is not a ticket


class TicketSettings(NamedTuple):
    """`tickets:`, the built-in linked-issues check (issue 60, DESIGN.md 20)."""

    mode: str = "warn"  # block | warn | off
    when: str = "ci"  # ci | commit (commit-time reviews too, when a token is set)
    max: int = 5  # tickets read at most
    jira: JiraSettings | None = None
    # Not a key: whether a settings layer wrote `tickets:`. Without it the tickets are read only when the change's
    # texts name one (a run whose pull request links none costs no request to the forge and says nothing).
    configured: bool = False


TICKET_KEYS = ("mode", "when", "max", "jira")


class Settings(NamedTuple):
    """The effective settings of a run: defaults, the settings file, environment and flags merged.

    A NamedTuple like the records beside it (a frozen dataclass of these fields costs every run a few
    milliseconds to create); change one with `settings._replace(...)`."""

    fail_on: str
    on_error: str
    format: str
    sarif_output: str | None
    json_output: str | None
    gitlab_output: str | None
    filter_mode: str
    sarif_category: str
    baseline: str | None
    provider: str
    model: str
    plan_model: str | None
    filter_model: str | None
    relocate_model: str | None
    compact_model: str | None
    max_output_tokens: int
    context_window: int
    review_filter: bool
    max_cost: float
    max_tokens: int
    timeout: float
    concurrency: int
    max_rounds: int
    max_files: int
    plan_threshold: int
    cache: bool
    cache_dir: str | None
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    sensitive: tuple[str, ...]
    max_file_lines: int
    max_file_bytes: int
    max_diff_lines: int
    rules: RawRules  # project guidance, parsed by ocr_hook.guidance.rules.rules_of
    review_files: tuple[str, ...]
    context_files: tuple[str, ...]
    language: str
    pricing: Mapping[str, Price] = MappingProxyType({})
    patch_output: str | None = None  # every suggested fix as one `git apply` patch (DESIGN.md 6)
    effort: str = "auto"  # auto | quick | standard | deep (ocr_hook.effort)
    risk_paths: tuple[str, ...] = ()  # gitignore-style globs auto reviews one level deeper
    memory: bool = True  # review memory: a re-review starts from the last one (DESIGN.md 7)
    late_findings: str = "advisory"  # findings raised late on unchanged lines: advisory | block
    # A review of a range: what the change does to exempt its own code is named; block: it fails the gate too.
    change_exemptions: str = "allow"
    dismissals_file: str = ".ocr-hook/dismissed.yaml"  # repo-relative (DESIGN.md 9, ocr_hook.findings.dismissals)
    notes: tuple[str, ...] = ()  # not a setting: what loading ignored (e.g. the repository's cache_dir), for reports
    warm: str = "auto"  # the warm worker for commit-time reviews: auto | on | off (DESIGN.md 14, ocr_hook.warm)
    warm_idle: float = 900.0  # seconds without a run before the warm worker exits
    context: bool = True  # the context pack in each file's first request (DESIGN.md 12, ocr_hook.context)
    context_tokens: int = 2000  # at most this many tokens of context pack per file
    claude_code_path: str | None = None  # provider claude-code: this `claude`, not the SDK's bundled one
    # Publishing (DESIGN.md 18): findings below this severity, or of these categories, go to the summary, not inline.
    summary_below: str = "medium"
    summary_categories: tuple[str, ...] = ()
    # Bitbucket Cloud pull requests: findings as comments whose threads resolve, not Code Insights annotations.
    bitbucket_comments: bool = False
    # Not a setting: what `provider: auto` chose and why (ocr_hook.provider_auto); empty when a provider was named.
    provider_choice: str = ""
    # Checks (DESIGN.md 20): the share of --max-cost, --max-tokens and --timeout kept for the change-level pass.
    checks_budget: float = 0.25
    tickets: TicketSettings = TicketSettings()  # linked tickets, the built-in check linked-issues (issue 60)

    def model_for(self, task: str) -> str:
        """The model for a task: "main", "plan", "filter", "relocate" or "compact"."""
        specific = {"plan": self.plan_model, "filter": self.filter_model, "relocate": self.relocate_model,
                    "compact": self.compact_model}
        return specific.get(task) or self.model

    def price_for(self, model: str) -> Price | None:
        return self.pricing.get(model)


_NOT_SETTINGS = ("notes", "provider_choice")
# The files at once when provider claude-code and nobody chose concurrency: one Claude Code CLI takes about
# 200 MB and most of a core while it starts (DESIGN.md 15; docs/claude-code.md has the measurements).
CLAUDE_CODE_CONCURRENCY = 4


def _as_written(kind: Any) -> str:
    """An evaluated annotation as the class body writes it: "str", "str | None", "Mapping[str, Price]"."""
    return kind.__name__ if isinstance(kind, type) else str(kind).replace("collections.abc.", "").replace(
        f"{__name__}.", "")


# Each setting's annotation as written. (This module's annotations are evaluated, not postponed: NamedTuple
# compiles every annotation left as text into a ForwardRef when the class is created, which cost every run
# about half a millisecond for these sixty fields.)
_FIELDS: dict[str, str] = {name: _as_written(kind)
                           for name, kind in Settings.__annotations__.items() if name not in _NOT_SETTINGS}
# Settings a repository's own .ocr-hook.yaml may not give, at any revision: a pull request controls that file,
# where the cache lives decides which files a run writes and deletes, the report paths name files a run
# overwrites (or removes, on exit 2), and claude_code_path names a program the run executes with the user's
# credentials (only the user's config, env or flags).
_USER_ONLY = ("cache_dir", "claude_code_path", "sarif_output", "json_output", "gitlab_output", "patch_output")
# Settings naming a file, resolved once where they were given: a config file's directory, or the directory
# the command was typed in (a flag, a variable); the run itself may work elsewhere (the CLI runs in a temporary
# directory).
_PLACED = ("cache_dir", "claude_code_path")
_POSITIVE = {"max_output_tokens", "context_window", "max_tokens", "timeout", "concurrency", "max_rounds", "max_files",
             "max_file_lines", "max_file_bytes", "max_diff_lines", "warm_idle", "context_tokens"}


# Guidance file names, looked for in every directory (ocr_hook.guidance): plain names, no paths.
_FILE_NAME_LISTS = ("review_files", "context_files")


def _check_file_names(key: str, names: Any, source: str) -> None:
    for name in names:
        if not name.strip() or "/" in name or "\\" in name or name in (".", ".."):
            raise ConfigError(f"{source}: setting '{key}' takes plain file names (looked for in every "
                              f"directory), got {name!r}")


def _repo_relative(key: str, value: str, source: str) -> str:
    """A '/'-separated path inside the repository: the file is read from the work tree and from commits."""
    parts = [p for p in value.replace("\\", "/").split("/") if p not in ("", ".")]
    if not value.strip() or value.startswith("/") or not parts or ".." in parts or "\0" in value:
        raise ConfigError(f"{source}: setting '{key}' must be a path inside the repository (relative to its "
                          f"root), got {value!r}")
    return "/".join(parts)


def _type_name(key: str) -> str:
    ann = _FIELDS[key]
    if key in CHOICES:
        return "one of " + ", ".join(CHOICES[key])
    return {
        "str": "a string", "str | None": "a string or null", "float": "a number", "int": "a whole number",
        "bool": "true or false", "tuple[str, ...]": "a list of strings",
        "Mapping[str, Price]": "a mapping of model name to {input, output, cache_write, cache_read}",
        "TicketSettings": "a mapping with mode (block, warn, off), when (ci, commit), max, jira {url, projects}",
    }.get(ann, ann)


def _coerce(key: str, value: Any, source: str) -> Any:
    """Check one value against the field's type; raise a ConfigError naming key, source and expectation."""
    if key not in _FIELDS:
        known = ", ".join(sorted(_FIELDS))
        raise ConfigError(f"{source}: unknown setting '{key}' (known settings: {known})")
    if key == "rules":  # the outer shape only: the entries are guidance's to parse (RawRules)
        return _raw_rules(value, source)
    if key == "tickets":
        return _tickets(value, source)
    ann = _FIELDS[key]

    def bad() -> ConfigError:
        return ConfigError(f"{source}: setting '{key}' must be {_type_name(key)}, got {value!r}")

    if ann == "str | None":
        if value is not None and not isinstance(value, str):
            raise bad()
        return value
    if ann == "str":
        if key == "warm" and isinstance(value, bool):
            value = "on" if value else "off"  # YAML 1.1 reads a bare on/off as a boolean
        if not isinstance(value, str):
            raise bad()
        if key == "dismissals_file":
            return _repo_relative(key, value, source)
        if key in CHOICES and value not in CHOICES[key]:
            raise bad()
        return value
    if ann == "bool":
        if not isinstance(value, bool):
            raise bad()
        return value
    if ann in ("int", "float"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad()
        if ann == "int" and float(value) != int(value):
            raise bad()
        number = int(value) if ann == "int" else float(value)
        if number < 0 or (key in _POSITIVE and number <= 0):
            raise ConfigError(f"{source}: setting '{key}' must be a positive number, got {value!r}")
        if key == "checks_budget" and number > 1:
            raise ConfigError(f"{source}: setting '{key}' is a share of the run's budget, 0 to 1, got {value!r}")
        return number
    if ann == "tuple[str, ...]":
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise bad()
        if key in _FILE_NAME_LISTS:
            _check_file_names(key, value, source)
        if key == "summary_categories" and any(v not in CATEGORIES for v in value):
            raise ConfigError(f"{source}: setting '{key}' takes categories ({', '.join(CATEGORIES)}), got {value!r}")
        return tuple(value)
    if ann == "Mapping[str, Price]":
        if not isinstance(value, Mapping):
            raise bad()
        prices = {}
        for model, entry in value.items():
            if (
                not isinstance(entry, Mapping)
                or set(entry) != set(PRICE_KEYS)
                or not all(isinstance(entry[k], int | float) and not isinstance(entry[k], bool) and entry[k] >= 0
                           for k in PRICE_KEYS)
            ):
                raise ConfigError(
                    f"{source}: pricing for '{model}' must be {{input, output, cache_write, cache_read}} "
                    f"in USD per million tokens, got {entry!r}"
                )
            prices[str(model)] = Price(**{k: float(entry[k]) for k in PRICE_KEYS})
        return prices
    raise AssertionError(f"unhandled settings type {ann}")


def _secure_url(url: str) -> bool:
    """Where a token may be sent: https, or plain http to this machine only (a local proxy; never the network)."""
    import re

    loopback = r"http://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(/|$)"
    return url.startswith("https://") or re.match(loopback, url) is not None


def _tickets(value: Any, source: str) -> TicketSettings:
    if isinstance(value, TicketSettings):
        return value
    if value is None:
        return TicketSettings()
    if not isinstance(value, Mapping) or set(value) - set(TICKET_KEYS):
        raise ConfigError(f"{source}: setting 'tickets' must be a mapping with mode (block, warn, off), when "
                          f"(ci, commit), max and jira {{url, projects}}, got {value!r}"[:300])
    mode, when, most = value.get("mode", "warn"), value.get("when", "ci"), value.get("max", 5)
    if mode not in ("block", "warn", "off"):
        raise ConfigError(f"{source}: setting 'tickets.mode' must be one of block, warn, off, got {mode!r}")
    if when not in ("ci", "commit"):
        raise ConfigError(f"{source}: setting 'tickets.when' must be one of ci, commit, got {when!r}")
    if isinstance(most, bool) or not isinstance(most, int) or not 1 <= most <= 50:
        raise ConfigError(f"{source}: setting 'tickets.max' must be a whole number from 1 to 50, got {most!r}")
    jira = value.get("jira")
    if jira is not None:
        url = jira.get("url") if isinstance(jira, Mapping) else None
        projects = jira.get("projects") if isinstance(jira, Mapping) else None
        if (not isinstance(jira, Mapping) or set(jira) - {"url", "projects"} or not isinstance(url, str)
                or not _secure_url(url) or not isinstance(projects, list) or not projects
                or not all(isinstance(p, str) and p.isupper() and p.replace("_", "").isalnum() and p[0].isalpha()
                           for p in projects)):
            raise ConfigError(f"{source}: setting 'tickets.jira' must be {{url: https://..., projects: [ABC, ...]}} "
                              f"(project keys in capitals), got {jira!r}"[:300])
        jira = JiraSettings(url.rstrip("/"), tuple(projects))
    return TicketSettings(mode, when, most, jira, configured=True)


def _raw_rules(value: Any, source: str) -> RawRules:
    if value is None or (isinstance(value, list | tuple) and not value):
        return RawRules((), source)
    if not isinstance(value, list | tuple):
        raise ConfigError(f"{source}: setting 'rules': must be a list of {{paths, instructions | instructions_file, "
                          f"ignore_categories}}, got {type(value).__name__}")
    for number, entry in enumerate(value, 1):
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{source}: setting 'rules' item {number}: must be a mapping with 'paths' and "
                              f"'instructions' or 'instructions_file', got {entry!r}"[:300])
    return RawRules(tuple(value), source)


def _from_mapping(data: Any, source: str) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: expected a mapping of settings at the top level, got {type(data).__name__}")
    return {str(k).replace("-", "_"): _coerce(str(k).replace("-", "_"), v, source) for k, v in data.items()}


def _read_yaml_file(path: "Path") -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    return _parse_yaml(text, str(path))


def _parse_yaml(text: str, source: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{source}:{where}: {problem}") from None


def _parse_env_value(key: str, raw: str, source: str) -> Any:
    ann = _FIELDS[key]
    if ann == "tuple[str, ...]":
        return [part for part in raw.split(",") if part]
    if ann == "str":
        return raw
    if ann == "str | None":
        return raw or None
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        raise ConfigError(f"{source}: expected {_type_name(key)}, got {raw!r}") from None


# OCR_HOOK_ variables that are read elsewhere, not settings: the settings file to use (cli), and the commit-time
# guess's override (hookenv.commit_time, documented in the README).
_ENV_NOT_SETTINGS = ("config", "commit_time")


def _from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    values = {}
    for name, raw in environ.items():
        if not name.startswith("OCR_HOOK_"):
            continue
        key = name[len("OCR_HOOK_"):].lower()
        if key in _ENV_NOT_SETTINGS:
            continue
        if key not in _FIELDS:
            raise ConfigError(f"environment variable {name}: unknown setting '{key}'")
        if key == "pricing":
            raise ConfigError(f"environment variable {name}: set pricing in {REPO_CONFIG_NAME}")
        values[key] = _coerce(key, _parse_env_value(key, raw, f"environment variable {name}"),
                              f"environment variable {name}")
    return values


def sources(repo_root: str | os.PathLike[str] | None, config_file: str | None = None,
            environ: Mapping[str, str] | None = None) -> list[str]:
    """Where `load` takes the settings from, lowest precedence first (flags aside), by the same rules."""
    environ = os.environ if environ is None else environ
    found = ["shipped defaults"]
    if config_file:
        found.append(f"{config_file} (--config)")
    elif environ.get("OCR_HOOK_CONFIG"):
        found.append(f"{environ['OCR_HOOK_CONFIG']} (OCR_HOOK_CONFIG)")
    elif repo_root is not None and os.path.isfile(os.path.join(repo_root, REPO_CONFIG_NAME)):
        found.append(REPO_CONFIG_NAME)
    variables = sorted(n for n in environ if n.startswith("OCR_HOOK_") and n[len("OCR_HOOK_"):].lower() in _FIELDS)
    if variables:
        found.append("environment " + ", ".join(variables))
    return found


# A scan covers the repository (issue 54.7): no cap on the number of files unless one is set (max_files in a
# settings file, OCR_HOOK_MAX_FILES or --max-files); the cost and token caps still hold.
SCAN_DEFAULTS: Mapping[str, Any] = {"max_files": 1_000_000}


def load(
    repo_root: str | os.PathLike[str] | None,
    config_file: str | None = None,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    repo_file: RepoFile | None = None,
    command_defaults: Mapping[str, Any] | None = None,
) -> Settings:
    """Merge every layer into one validated Settings. `repo_file`: the repository's settings file as the
    trusted revision has it (a review of a range), instead of the work tree's. `command_defaults` replace
    shipped defaults for one command (SCAN_DEFAULTS), below every layer a user writes."""
    environ = os.environ if environ is None else environ
    merged = _from_mapping(config_files.read_yaml("defaults.yaml"), "shipped config/defaults.yaml")
    merged.update(command_defaults or {})
    defaults_pricing = dict(merged["pricing"])
    notes: list[str] = []

    config_file = config_file or environ.get("OCR_HOOK_CONFIG") or None
    # pathlib only when there is a file to read: it is not loaded otherwise on an idle run.
    if config_file:
        from pathlib import Path

        path = Path(config_file)
        if not path.is_file():
            raise ConfigError(f"config file not found: {config_file}")
        layer = _from_mapping(_read_yaml_file(path), str(path))
        for key in _PLACED:
            if layer.get(key):
                layer[key] = _beside(layer[key], path.parent)
    elif repo_file is not None:
        source = f"{REPO_CONFIG_NAME} at {repo_file.revision}"
        layer = {} if repo_file.text is None else _from_mapping(_parse_yaml(repo_file.text, source), source)
        _drop_user_only(layer, notes)
    elif repo_root is not None and os.path.isfile(os.path.join(repo_root, REPO_CONFIG_NAME)):
        from pathlib import Path

        path = Path(repo_root) / REPO_CONFIG_NAME
        layer = _from_mapping(_read_yaml_file(path), REPO_CONFIG_NAME)
        _drop_user_only(layer, notes)
    else:
        layer = {}
    # A user's pricing adds to or overrides the shipped table instead of replacing it.
    if "pricing" in layer:
        layer["pricing"] = {**defaults_pricing, **layer["pricing"]}
    merged.update(layer)
    env_layer = _from_env(environ)
    if env_layer.get("cache_dir") and not os.path.isabs(os.path.expanduser(env_layer["cache_dir"])):
        # A variable has no place of its own: it reaches every process, in whatever directory (pre-commit runs
        # hooks at the repository's root), so a relative one would put the cache there.
        raise ConfigError(f"environment variable OCR_HOOK_CACHE_DIR: must be an absolute path, got "
                          f"{env_layer['cache_dir']!r}")
    if env_layer.get("claude_code_path"):  # relative to the directory the variable was set for the command in
        env_layer["claude_code_path"] = os.path.abspath(os.path.expanduser(env_layer["claude_code_path"]))
    merged.update(env_layer)
    for key, value in (flags or {}).items():
        if value is not None:
            merged[key] = _coerce(key, value, f"option --{key.replace('_', '-')}")
    chosen = set(layer) | set(env_layer) | {k for k, v in (flags or {}).items() if v is not None}
    for key in _PLACED:
        if (flags or {}).get(key):  # typed in a shell: relative to where it was typed, made absolute now
            merged[key] = os.path.abspath(os.path.expanduser(merged[key]))
        elif merged.get(key):
            merged[key] = os.path.expanduser(merged[key])
    choice = ""
    if merged.get("provider") == "auto":
        from ocr_hook.provider_auto import choose

        merged["provider"], choice = choose(environ, merged.get("claude_code_path"))
    if merged.get("provider") == "claude-code" and "concurrency" not in chosen:
        merged["concurrency"] = min(merged["concurrency"], CLAUDE_CODE_CONCURRENCY)
    return Settings(**merged, notes=tuple(notes), provider_choice=choice)


def settings_hidden_by_sparse_checkout(repo_root: str, config_file: str | None, environ: Mapping[str, str]) -> bool:
    """Whether the repository's settings file may be in the index though not in the work tree: no settings file
    is named, the work tree has none, and git's sparse-checkout pattern file is in the work tree's git directory
    (`git sparse-checkout set --no-cone '/src/*'` leaves the root file out: issue 62.7). From the file system
    alone: most repositories have no settings file, and the idle run of a hook must not pay a git process to
    learn that the index has none either."""
    if config_file or environ.get("OCR_HOOK_CONFIG") or os.path.isfile(os.path.join(repo_root, REPO_CONFIG_NAME)):
        return False
    return is_sparse_checkout(repo_root, environ)


def is_sparse_checkout(repo_root: str, environ: Mapping[str, str]) -> bool:
    """Whether git's sparse-checkout pattern file is in the work tree's git directory (no git process)."""
    git_dir = environ.get("GIT_DIR") or os.path.join(repo_root, ".git")
    if os.path.isfile(git_dir):  # a linked work tree (or a submodule): `gitdir: PATH` names its git directory
        try:
            with open(git_dir, encoding="utf-8") as handle:
                line = handle.readline().strip()
        except (OSError, UnicodeDecodeError):
            return False
        if not line.startswith("gitdir:"):
            return False
        git_dir = os.path.join(os.path.dirname(git_dir), line[len("gitdir:"):].strip())
    return os.path.isfile(os.path.join(git_dir, "info", "sparse-checkout"))


def _drop_user_only(layer: dict[str, Any], notes: list[str]) -> None:
    for key in _USER_ONLY:
        if layer.pop(key, None) is not None:
            flag = "" if key == "claude_code_path" else f"--{key.replace('_', '-')}, "  # (it has no flag)
            notes.append(f"{REPO_CONFIG_NAME}: setting '{key}' ignored: the repository's own settings file "
                         f"cannot choose it (a pull request could); set it with {flag}OCR_HOOK_{key.upper()} or "
                         "your own --config file")


def _beside(value: str, directory: "Path") -> str:
    """A path from a settings file, relative to that file's directory (never to the current one)."""
    return os.path.join(directory.resolve(), os.path.expanduser(value))


def as_values(settings: Settings) -> dict[str, Any]:
    """Every setting as plain data (lists and mappings, JSON-ready), as `from_values` reads it back: the
    settings a delegate session fixed at its start (DESIGN.md 15)."""
    values: dict[str, Any] = {key: getattr(settings, key) for key in _FIELDS}
    values["rules"] = list(settings.rules.items)
    values["pricing"] = {model: price._asdict() for model, price in settings.pricing.items()}
    tickets = settings.tickets
    values["tickets"] = None if not tickets.configured else {
        "mode": tickets.mode, "when": tickets.when, "max": tickets.max,
        "jira": None if tickets.jira is None else {"url": tickets.jira.url, "projects": list(tickets.jira.projects)}}
    return values


def from_values(values: Any, source: str, rules_source: str = "") -> Settings:
    """Settings from `as_values`' data, every value checked as a settings file's is (ConfigError naming
    `source`); every setting must be there."""
    layer = _from_mapping(values, source)
    missing = sorted(set(_FIELDS) - set(layer))
    if missing:
        raise ConfigError(f"{source}: settings missing: {', '.join(missing)}")
    layer["rules"] = RawRules(layer["rules"].items, rules_source)
    return Settings(**layer)
