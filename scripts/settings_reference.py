"""Writes docs/configuration.md, the settings reference, from the shipped defaults.

Every setting's default comes from config/defaults.yaml, its type and choices from ocr_hook.settings, its
flag from the `review` command's options, and the built-in lists from config/selection.yaml and
config/tools.yaml; only the one-paragraph meanings below are written by hand. A setting in the defaults
without a meaning here (or a meaning without a setting) stops the script, so the page cannot fall behind
the code: tests/test_docs_site.py fails when the committed page differs from what this script writes now.

    python scripts/settings_reference.py           # rewrite docs/configuration.md
    python scripts/settings_reference.py --check   # exit 1 if the committed page is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "configuration.md"
CONFIG = ROOT / "config"

# (group title, [(setting, meaning)]), in the order of config/defaults.yaml. Links are relative to docs/.
GROUPS: list[tuple[str, list[tuple[str, str]]]] = [
    ("Gate and output", [
        ("fail_on", "Lowest severity that fails the run (exit 1); `never` only reports."),
        ("on_error", "`warn`: an incomplete review exits 0, with a loud warning, instead of 3."),
        ("format", "What goes to standard output (see [Outputs](commands.md#outputs))."),
        ("sarif_output", "Also write SARIF 2.1.0 to this file."),
        ("json_output", "Also write the JSON report to this file."),
        ("gitlab_output", "Also write GitLab Code Quality JSON to this file."),
        ("patch_output", "Write every suggested fix as one patch for `git apply` (written empty when there is "
                         "none; see [Suggested fixes](commands.md#suggested-fixes))."),
        ("filter_mode", "Which findings are kept: `added` (on added lines), `diff_context` (on lines shown in "
                        "the diff), `file` (anywhere in a changed file), `nofilter`; what it drops is counted "
                        "in the report."),
        ("sarif_category", "The `automationDetails.id` prefix, to upload several analyses of one repository."),
        ("baseline", "A file of fingerprints to report as suppressed (`ocr-hook baseline` writes it)."),
        ("dismissals_file", "Where `ocr-hook dismiss` records dismissals, relative to the repository root "
                            "(see [Dismissals](dismissals.md))."),
        ("summary_below", "`ocr-hook publish` lists findings below this severity in the pull request's summary "
                          "instead of commenting them inline; never dropped, and the gate is unchanged (`low`: "
                          "everything inline). Why `medium`: the people reading a pull request's diff want the "
                          "findings that may need a change before merging beside the code, and a row of inline "
                          "nits is what teaches them to skim past a bot's comments; the low ones stay one click "
                          "away in the summary, each with its place and suggestion (see "
                          "[Publishing](recipes/publish.md#what-goes-inline))."),
        ("summary_categories", "Categories (`style`, `documentation`, ...) whose findings `ocr-hook publish` "
                               "lists in the summary, not inline, whatever their severity. Empty by default: a "
                               "category says what a finding is about, not how much it matters (a `test` finding "
                               "can be a real gap), so leaving some out of the diff is each team's choice."),
        ("bitbucket_comments", "On a Bitbucket Cloud pull request, `ocr-hook publish` posts the findings as pull "
                               "request comments (inline where their lines are in the diff, the rest in one "
                               "summary comment) whose threads it resolves when a later push fixes them, and "
                               "reads a maintainer's resolve as a dismissal; the Code Insights report stays the "
                               "verdict, without annotations. Off by default: it needs an access token with more "
                               "scopes than Code Insights does (see [Bitbucket](recipes/bitbucket.md"
                               "#pull-request-comments-that-resolve-bitbucket_comments))."),
    ]),
    ("Model", [
        ("provider", "`auto` reviews with the API key when there is one, else through Claude Code when it has a "
                     "token or a login and the `claude-code` extra is installed, else exits 2 naming the three ways "
                     "in; the report's notes and `ocr-hook doctor` say which it chose. `bedrock` and `vertex` use "
                     "the SDK's Amazon Bedrock or Google Vertex client and their usual credentials; `claude-code` "
                     "reviews through Claude Code on the user's Claude plan (see [Claude Code](claude-code.md))."),
        ("claude_code_path", "With `provider: claude-code`, this `claude` executable; null: the one bundled in the "
                             "`claude-code` extra. A relative path is resolved once, against the directory of "
                             "your settings file, or where the command runs for the variable."),
        ("model", "The model of the review loop."),
        ("plan_model", "The model of the plan phase; null: `model`."),
        ("filter_model", "The model of the review filter; null: `model`."),
        ("relocate_model", "The model that re-locates comments whose quote could not be placed; null: `model`."),
        ("compact_model", "The model that summarises older turns of long conversations; null: `model`."),
        ("max_output_tokens", "Output tokens per request."),
        ("context_window", "The model's context window in tokens: a summary of older turns is prepared in the "
                           "background at 60 % of it, and older tool output is elided at 80 %. Left at the "
                           "default, the model's own `max_input_tokens` from the Models API is used where the "
                           "endpoint has one."),
        ("review_filter", "One request per file that drops the comments the shown code (the diff, the file's "
                          "lines as the first message showed them, the context pack) proves wrong, with the "
                          "reason in the report; any failure keeps every comment."),
        ("context", "A context pack and the change's intent in each file's first request (see "
                    "[Context](context.md))."),
        ("context_tokens", "At most this many tokens of context pack per file; a cut pack says so."),
    ]),
    ("Budget and speed", [
        ("max_cost", "USD for the whole run: a ceiling, never exceeded (each request reserves its worst case "
                     "first; see [Cost and time](effort.md#cost-time-and-long-reviews))."),
        ("max_tokens", "Input and output tokens for the whole run (cache reads count)."),
        ("timeout", "Seconds of wall clock for the whole run, enforced even while the SDK waits on "
                    "`retry-after`."),
        ("concurrency", "Files reviewed at once."),
        ("max_rounds", "Model turns per file (the last offers only `code_comment` and `task_done`; "
                       "`effort: quick` stops at 8)."),
        ("max_files", "Files reviewed per run, most valuable first; the rest are listed as not reviewed. "
                      "`ocr-hook scan` has no cap unless one is set here, in the environment or with `--max-files`."),
        ("plan_threshold", "Changed lines from which a file gets a read-only plan phase first (under "
                           "`effort: standard`)."),
        ("effort", "How deep each file's review goes; `auto` is `quick` at commit time (a git hook, see "
                   "[Hook managers](hook-managers.md)) and `standard` elsewhere (see [Effort](effort.md))."),
        ("risk_paths", "Gitignore-style globs that `effort: auto` reviews one level deeper; setting it "
                       "replaces the list."),
        ("cache", "Reuse the findings of files whose diff, content, models, prompts and settings are unchanged."),
        ("cache_dir", "Where the result cache, review memory and Models API lookups live; null: the user cache "
                      "directory (`%LOCALAPPDATA%\\ocr-hook\\Cache` on Windows). Never taken from the "
                      "repository's own `.ocr-hook.yaml` (see [Security](security.md#what-a-pull-request-can-"
                      "and-cannot-change)); from a settings file it is relative to that file, from the "
                      "environment it must be absolute."),
        ("memory", "Review memory: a re-review after a fix looks at what changed since the last review (see "
                   "[Review memory](memory.md))."),
        ("late_findings", "`block`: findings raised now on lines unchanged since the last review block too."),
        ("checks_budget", "The share (0 to 1) of `max_cost`, `max_tokens` and `timeout` kept for evaluating the "
                          "team's checks when any apply; the files' reviews get the rest (see [Checks](checks.md))."),
        ("tickets", "The built-in check `linked-issues`: a pull request's linked issues read from the forge (and "
                    "Jira), each requirement met, not met or needing a person. `mode` (`block`, `warn`, `off`; "
                    "default `warn`), `when` (`ci`, or `commit` for commit-time reviews too), `max` (tickets read, "
                    "default 5), `jira: {url, projects}`. Without this section the tickets are read only when the "
                    "change's title, body, branch or commits name one. Read, like every repository setting of a "
                    "range, at the trusted revision (see [Linked tickets](tickets.md))."),
        ("change_exemptions", "In a review of a range, what the change does to exempt its own code is named "
         "in the verdict line and every output: a file it adds or modifies that a built-in path rule skips "
         "(vendored, generated, build output, minified), a generated marker it writes, an inline "
         "`ocr-hook: ignore` on a line it adds, a dismissal it adds. `block`: each also fails the gate until it is "
         "on the trusted revision. Read, like every repository setting of a range, at the trusted revision "
         "([security](security.md#what-a-pull-request-can-and-cannot-change))."),
        ("warm", "The warm worker for commit-time reviews: `auto` is on at commit time (a git hook) on Linux "
                 "and macOS, never in CI or on Windows (see [Warm worker](warm-worker.md))."),
        ("warm_idle", "Seconds without a run after which the warm worker exits."),
    ]),
    ("File selection", [
        ("include", "Gitignore-style globs; when not empty, only matching files are reviewed."),
        ("exclude", "Gitignore-style globs never reviewed; `!pattern` re-includes a default skip such as "
                    "`dist/`."),
        ("sensitive", "More globs of files that must never leave the machine (added to the list below)."),
        ("max_file_lines", "Longer files are skipped, and the review is incomplete."),
        ("max_file_bytes", "Larger files are skipped, and the review is incomplete. Nothing reads them whole: "
                           "not the diff's rename detection, nor the model's `file_read` and `code_search` (they "
                           "say the file is too large)."),
        ("max_diff_lines", "Files with more changed lines are skipped, and the review is incomplete."),
    ]),
    ("Project guidance", [
        ("rules", "Path rules: `paths` and one of `instructions` / `instructions_file`, optionally "
                  "`ignore_categories` and `effort` (see [Guidance](guidance.md))."),
        ("review_files", "Review instruction files, looked for in the root and every directory."),
        ("context_files", "Project context files found the same way; `[]` turns it off."),
        ("language", "The language review comments are written in; severities, categories and code stay "
                     "as they are."),
    ]),
    ("Pricing", [
        ("pricing", "USD per million tokens per model, in a settings file only; adds to the shipped table. "
                    "Every model in use needs a price, so the cost cap holds (0 for a free local model: then "
                    "`max_tokens` and `timeout` limit the run; see [Compatible servers](compatible-servers.md))."),
    ]),
]


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list) and not value:
        return "[]"
    if isinstance(value, list) and len(value) <= 3:
        return "`[" + ", ".join(value) + "]`"
    if isinstance(value, list):
        return f"{len(value)} globs, listed below"
    if isinstance(value, dict):
        return f"{len(value)} models, listed below"
    return f"`{value}`"


def _flags() -> dict[str, str]:
    """Setting name → the `review` option that sets it (`--no-cache` for cache, ...)."""
    from ocr_hook.cli import review

    found = {}
    for param in review.params:
        opts = [o for o in param.opts if o.startswith("--")]
        if not opts or param.name is None:
            continue
        name = param.name.rstrip("_")
        found[name.removeprefix("no_")] = opts[0]
    return found


def render() -> str:
    from ocr_hook import settings

    defaults = _yaml(CONFIG / "defaults.yaml")
    described = [key for _, items in GROUPS for key, _ in items]
    missing = [k for k in defaults if k not in described]
    unknown = [k for k in described if k not in defaults]
    if missing or unknown or len(set(described)) != len(described):
        raise SystemExit(f"scripts/settings_reference.py: settings without a meaning: {missing}; meanings "
                         f"without a setting: {unknown}; add or remove them in GROUPS")
    flags = _flags()
    out = [
        "<!-- Generated by scripts/settings_reference.py from config/*.yaml: do not edit by hand. -->",
        "# Configuration",
        "",
        "Every setting can be given in `.ocr-hook.yaml` at the repository root (or the file named by `--config` "
        "or `OCR_HOOK_CONFIG`), as an environment variable `OCR_HOOK_<KEY>` (lists comma separated) and, for "
        "many, as a flag of `ocr-hook review`. Precedence: shipped defaults < file < environment < flags. An "
        "unknown key or a wrong type is an error that names the key, where it came from and what is expected "
        "(exit 2). A review of a range (`--base`, `--from/--to`, `--commit`, `--push`, CI) reads the "
        "repository's `.ocr-hook.yaml` as the side before the change has it, never the change's own edit "
        "(see [the trust rule](guidance.md#the-trust-rule)). A sparse checkout that leaves `.ocr-hook.yaml` out "
        "of the work tree does not drop the settings: they are read from the index, and the notes say so.",
        "",
        "```yaml",
        "# .ocr-hook.yaml",
        "fail_on: critical",
        "max_cost: 0.50",
        "exclude: [\"docs/**\"]",
        "```",
        "",
    ]
    for title, items in GROUPS:
        out += [f"## {title}", ""]
        for key, meaning in items:
            facts = [f"default {_value(defaults[key])}", settings._type_name(key),
                     "not from the environment" if key == "pricing" else f"`OCR_HOOK_{key.upper()}`"]
            if key in flags:
                facts.append(f"`{flags[key]}`")
            if key in settings._USER_ONLY:
                facts.append("ignored in the repository's `.ocr-hook.yaml`")
            out += [f"### `{key}`", "", meaning, "", "*" + " · ".join(facts) + "*", ""]
    out += _lists(defaults)
    return "\n".join(out).rstrip() + "\n"


def _bullets(items: list[str]) -> list[str]:
    return [", ".join(f"`{i}`" for i in items), ""]


def _lists(defaults: dict[str, Any]) -> list[str]:
    selection = _yaml(CONFIG / "selection.yaml")
    tools = _yaml(CONFIG / "tools.yaml")["tools"]
    out = ["## Built-in lists", "",
           "### Risk paths", "", "The default of `risk_paths`:", "", *_bullets(defaults["risk_paths"]),
           "### Prices", "", "The shipped `pricing` table, USD per million tokens:", "",
           "| model | input | output | cache write | cache read |", "|---|---:|---:|---:|---:|"]
    for model, price in defaults["pricing"].items():
        out.append(f"| `{model}` | {price['input']} | {price['output']} | {price['cache_write']} | "
                   f"{price['cache_read']} |")
    out += ["", "### Sensitive files", "",
            "Never reviewed, read, diffed or searched, whatever `include` or `exclude` say; matched against the "
            "new and the old path (`config/selection.yaml`), plus your `sensitive` globs:", "",
            *_bullets(selection["sensitive"]),
            "These match by a name's stem, and so never match source code (a file ending in one of "
            f"{', '.join(f'`{x}`' for x in selection['source_suffixes'])}: `secrets.py` is reviewed, its "
            "high-confidence secrets masked):", "",
            *_bullets(selection["sensitive_by_stem"]),
            "### Skipped by default", "",
            "Each is listed with its reason in every output; an `exclude` entry `!PATTERN` re-includes one.", "",
            "| reason | globs |", "|---|---|"]
    for reason, globs in selection["default_skip"].items():
        out.append(f"| {reason} | {', '.join(f'`{g}`' for g in globs)} |")
    out += ["", f"A file is also skipped as generated when one of its first {selection['marker_lines']} lines "
            "contains one of these (case-sensitive):", "", *_bullets(selection["generated_markers"]),
            "Deleted, binary, submodule and symlink entries are skipped too.", "",
            "### Review order", "",
            f"Most changed lines first, weighted ×{selection['priority']['risky_weight']} when the lower-cased "
            f"path contains one of {', '.join(f'`{w}`' for w in selection['priority']['risky'])}, and "
            f"×{selection['priority']['low_weight']} when it contains one of "
            f"{', '.join(f'`{w}`' for w in selection['priority']['low'])}; ties by path.", "",
            "### The model's tools", "",
            "The tools a review offers the model (`config/tools.yaml`); all read the reviewed snapshot only "
            "(see [Security](security.md)):", "",
            "| tool | phases | |", "|---|---|---|"]
    for tool in tools:
        first = tool["description"].split(". ")[0].rstrip(".")
        out.append(f"| `{tool['name']}` | {', '.join(tool['phases'])} | {first}. |")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/configuration.md is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE.relative_to(ROOT)} is stale: run python scripts/settings_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.parent.mkdir(exist_ok=True)
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
