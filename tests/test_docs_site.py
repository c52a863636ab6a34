"""The documentation site (mkdocs.yml, docs/): it builds with --strict, every internal link and anchor of the
built HTML resolves, the settings reference is what scripts/settings_reference.py writes from the shipped
defaults now, and the README keeps its two set-up commands and links only to pages that exist."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about its successor, not a warning
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f",
                           str(ROOT / "mkdocs.yml"), "-d", str(out)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    return out


class _Page(HTMLParser):
    """The ids (anchors) a page defines and the hrefs of its links."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"] or "")
        if tag == "a" and values.get("name"):
            self.ids.add(values["name"] or "")
        if tag == "a" and values.get("href") is not None:
            self.hrefs.append(values["href"] or "")


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _site_path() -> str:
    """The path the site is published under (mkdocs.yml's site_url), '/' at a domain's root."""
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return urlsplit(config.get("site_url") or "/").path.rstrip("/") + "/"


def broken_links(site: Path, site_path: str = "/") -> list[str]:
    """Every internal link of the built site whose page or anchor does not exist, as 'page: href'."""
    pages = {p: _parse(p) for p in site.rglob("*.html")}
    broken = []
    for path, page in pages.items():
        for href in page.hrefs:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc:
                continue  # another site: not ours to check offline
            if parts.path.startswith("/") and not parts.path.startswith(site_path):
                broken.append(f"{path.relative_to(site)}: {href}")  # outside the published site
                continue
            if parts.path:
                # 404.html links from the site's path: it is served for any missing path, at any depth
                base = site if parts.path.startswith("/") else path.parent
                local = parts.path[len(site_path):] if parts.path.startswith("/") else parts.path
                target = (base / unquote(local)).resolve()
                if target.is_dir() or parts.path.endswith("/"):
                    target = target / "index.html"
            else:
                target = path.resolve()
            where = f"{path.relative_to(site)}: {href}"
            if not target.is_relative_to(site.resolve()) or not target.is_file():
                broken.append(where)
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(where)
    return broken


def test_the_site_builds_strict_and_has_every_page(site: Path) -> None:
    # the pages issue 48 asks for: recipes per hook manager, CI system and forge, how it reviews, security
    for page in ("getting-started", "configuration", "commands", "recipes/pre-commit", "hook-managers",
                 "recipes/ci-systems", "recipes/github", "recipes/gitlab", "recipes/gitea", "recipes/bitbucket",
                 "recipes/azure", "context", "memory", "effort", "dismissals", "warm-worker", "compatible-servers",
                 "security", "quality", "development"):
        assert (site / page / "index.html").is_file(), page


def test_every_internal_link_and_anchor_of_the_built_site_resolves(site: Path) -> None:
    assert broken_links(site, _site_path()) == []
    # The 404 page is served for a missing path at any depth: its links hold only from the site's own path
    # (site_url), never relative to wherever it was served.
    page = _parse(site / "404.html")
    internal = [h for h in page.hrefs if not urlsplit(h).scheme and not urlsplit(h).netloc]
    assert len(internal) >= 20 and _site_path() != "/"
    assert [h for h in internal if not h.startswith(_site_path())] == []
    # The check sees the links: the configuration page links to anchors on other pages.
    hrefs = _parse(site / "configuration" / "index.html").hrefs
    assert any(h.startswith("../commands/#") for h in hrefs), hrefs


def test_the_link_check_finds_a_missing_page_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "index.html").write_text('<h2 id="top">x</h2><a href="a/#here">ok</a><a href="#top">ok</a>'
                                         '<a href="b/">gone</a><a href="a/#nowhere">no anchor</a><a href="/a/">root</a>'
                                         '<a href="https://example.com/x#y">elsewhere</a>', encoding="utf-8")
    (tmp_path / "a" / "index.html").write_text('<p id="here">x</p><a href="../../outside.html">out</a>',
                                               encoding="utf-8")
    assert sorted(broken_links(tmp_path)) == ["a/index.html: ../../outside.html", "index.html: a/#nowhere",
                                              "index.html: b/"]
    # published under /docs/: a link from the domain's root is outside it, one from /docs/ is checked
    (tmp_path / "404.html").write_text('<a href="/a/#here">root</a><a href="/docs/a/#here">ok</a>'
                                       '<a href="/docs/c/">gone</a>', encoding="utf-8")
    assert sorted(broken_links(tmp_path, "/docs/"))[:3] == ["404.html: /a/#here", "404.html: /docs/c/",
                                                            "a/index.html: ../../outside.html"]


# Material's code blocks in a 1280 px window, measured in headless Chromium: with the page's contents in the
# left sidebar (toc.integrate in mkdocs.yml) the code box's text area is 906 px wide, and Roboto Mono at
# 13.6 px advances 8.18 px a character, so 110 characters show (with a right-hand contents sidebar too: 656 px,
# 80 characters); a longer line is cut and scrolls sideways.
CODE_CHARS_AT_1280 = 110
# More words than this with no heading, list, table or code block between them is a wall a reader cannot scan.
MAX_STRETCH_WORDS = 400
_BREAKS = {"h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "dl", "dt", "dd", "table", "pre", "hr",
           "details", "summary"}
_SKIPPED = {"pre", "table", "script", "style"}


class _Article(HTMLParser):
    """A built page's article: its stretches of prose (words between breaks) and its code blocks' lines."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # inside <article>
        self.skipping: list[str] = []
        self.stretches: list[tuple[int, str]] = [(0, "")]
        self.code: list[str] = []
        self.wrapping: list[bool] = []  # per code block: it wraps long lines
        self.wraps = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "article":
            self.depth += 1
        if not self.depth:
            return
        if tag in _BREAKS:
            self.stretches.append((0, ""))
        if tag == "div" and any(k == "class" and v and "transcript" in v.split() for k, v in attrs):
            self.wraps = True  # a terminal's transcript: it wraps as a terminal does (docs/stylesheets/extra.css)
        if tag in _SKIPPED:
            self.skipping.append(tag)
            if tag == "pre":
                self.code.append("")
                self.wrapping.append(self.wraps)
                self.wraps = False

    def handle_endtag(self, tag: str) -> None:
        if tag == "article":
            self.depth -= 1
        if self.skipping and tag == self.skipping[-1]:
            self.skipping.pop()
        if self.depth and tag in _BREAKS:
            self.stretches.append((0, ""))

    def handle_data(self, data: str) -> None:
        if not self.depth:
            return
        if self.skipping:
            if self.skipping[0] == "pre":
                self.code[-1] += data
            return
        words, start = self.stretches[-1]
        self.stretches[-1] = (words + len(data.split()), start or " ".join(data.split()[:8]))


def prose_problems(html: str, name: str) -> list[str]:
    article = _Article()
    article.feed(html)
    walls = [f"{name}: {words} words without a heading, list, table or code block, from {start!r}"
             for words, start in article.stretches if words > MAX_STRETCH_WORDS]
    wide = [f"{name}: a code line of {len(line)} characters (at most {CODE_CHARS_AT_1280} show): {line[:50]!r}"
            for block, wraps in zip(article.code, article.wrapping, strict=True) if not wraps
            for line in block.splitlines() if len(line) > CODE_CHARS_AT_1280]
    return walls + wide


def test_no_page_is_a_wall_of_text_or_has_a_code_line_cut_at_1280_px(site: Path) -> None:
    pages = sorted(p for p in site.rglob("index.html") if p.parent != site / "search")
    assert len(pages) >= 25
    problems = [p for page in pages for p in prose_problems(page.read_text(encoding="utf-8"),
                                                             str(page.parent.relative_to(site)))]
    assert problems == []


def test_the_prose_check_finds_a_wall_and_a_wide_code_line() -> None:
    words = " ".join(["word"] * 250)
    wall = f"<article><h2>x</h2><p>{words}</p><p>{words}</p><ul><li>{words}</li></ul></article>"
    assert prose_problems(wall, "p") == [f"p: 500 words without a heading, list, table or code block, from "
                                         f"{' '.join(['word'] * 8)!r}"]
    split = f"<article><p>{words}</p><h3>y</h3><p>{words}</p><pre><code>{'x' * 110}\n{words}</code></pre></article>"
    assert prose_problems(split, "p") == [f"p: a code line of {len(words)} characters (at most 110 show): "
                                          f"{words[:50]!r}"]
    assert prose_problems(f"<p>{words} {words}</p><article></article>", "p") == []  # outside the article
    transcript = f'<article><div class="transcript highlight"><pre><code>{"x" * 200}</code></pre></div></article>'
    assert prose_problems(transcript, "p") == []  # it wraps


def _reference_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("settings_reference", ROOT / "scripts" / "settings_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_settings_reference_is_generated_from_the_shipped_defaults() -> None:
    script = _reference_script()
    committed = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert committed == script.render(), "docs/configuration.md is stale: run python scripts/settings_reference.py"
    import yaml

    for key, value in yaml.safe_load((ROOT / "config" / "defaults.yaml").read_text(encoding="utf-8")).items():
        assert f"### `{key}`" in committed
        assert f"`OCR_HOOK_{key.upper()}`" in committed or key == "pricing"
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            assert f"default `{value}`" in committed, key


def test_a_setting_without_a_meaning_stops_the_generator(tmp_path: Path) -> None:
    script = _reference_script()
    shutil.copytree(ROOT / "config", tmp_path / "config")
    with (tmp_path / "config" / "defaults.yaml").open("a", encoding="utf-8") as handle:
        handle.write("brand_new_setting: 3\n")
    script.CONFIG = tmp_path / "config"
    with pytest.raises(SystemExit, match="brand_new_setting"):
        script.render()


def test_the_readme_keeps_its_set_up_commands_and_links_to_pages_that_exist() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 210
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    assert any("python3 -m venv .venv" in b and "pip install '.[test]'\n" in b for b in blocks), blocks
    assert "pytest\n" in blocks
    # how long the suite takes, and that it wants a virtual environment (issue 54 item 13)
    assert "minutes on 2 cores" in text and "docs/development.md#how-long-the-suite-takes" in text
    assert "pytest   # the README's test command" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    links = [link.split("#")[0] for link in re.findall(r"\]\((docs/[^)]+)\)", text)]
    assert len(links) >= 10
    assert [link for link in links if not (ROOT / link).is_file()] == []


def test_the_readme_quickstarts_are_recipes_of_the_docs() -> None:
    """The README's YAML is copied from the docs' pages, whose tests run or lint it; the hook ids exist."""
    import yaml

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    docs = "".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").rglob("*.md")))
    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.S)
    assert len(blocks) == 3  # pre-commit, GitLab CI, the GitHub Action
    assert [b for b in blocks if f"```yaml\n{b}```" not in docs] == []
    hooks = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    used = {h["id"] for repo in yaml.safe_load(blocks[0])["repos"] for h in repo["hooks"]}
    assert used == {"ocr-hook", "ocr-hook-push"} and used <= hooks


def test_the_home_page_carries_the_readme_s_quickstarts() -> None:
    """The site's first page is where a newcomer lands: the README's quickstarts are there, code and all."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    quickstarts = re.findall(r"^## (Quickstart: .*?)\n(.*?)(?=^## )", readme, re.S | re.M)
    assert len(quickstarts) == 4
    for title, body in quickstarts:
        assert f"## {title}\n" in home, title
        blocks = re.findall(r"```[a-z]*\n.*?```", body, re.S)
        assert blocks and [b for b in blocks if b not in home] == [], title
