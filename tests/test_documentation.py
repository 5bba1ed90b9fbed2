"""The documentation: a README that is a front door, a site built from ``docs/`` whose links
resolve, and a CI entry point that builds the site and runs the linter and the type checker
before the tests.

``mkdocs build --strict`` (run by ``.ci/run``) fails on a broken link between pages of the site;
the README is not part of the site, and a clone without mkdocs still runs these tests, so
relative links are checked here too, parsed as Markdown (markdown-it-py: a link inside a code
span or a code block is not a link).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.conftest import ROOT

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
#: the README is a front door: what Fyan is, the two commands, installing Lean, commands, links
README_LIMIT = 15 * 1024


def links(text: str) -> list[str]:
    """Every link target of a Markdown text (inline links, reference links, images)."""
    found: list[str] = []

    def walk(tokens) -> None:
        for token in tokens:
            if token.type == "link_open":
                found.append(token.attrGet("href"))
            elif token.type == "image":
                found.append(token.attrGet("src"))
            if token.children:
                walk(token.children)

    walk(MarkdownIt("commonmark").enable("table").parse(text))
    return found


def slugs(text: str) -> set[str]:
    """The anchors of a page's headings, in both spellings a reader meets: the site's
    (Python-Markdown's ``toc`` slugify: runs of spaces and hyphens become one hyphen) and
    GitHub's (every space becomes a hyphen, so ``a -- b`` keeps three)."""
    out = set()
    fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        if fence or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        words = re.sub(r"[^\w\s-]", "", title)
        out.add(re.sub(r"[-\s]+", "-", words).strip("-"))
        out.add(words.replace(" ", "-"))
    return out


def broken_links(page: Path) -> list[str]:
    """The relative links of ``page`` whose file (or heading anchor) does not exist."""
    bad = []
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("//"):
            continue  # an absolute URL (https:, mailto:): not checked offline
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target} (no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest})")
        elif anchor and dest.suffix == ".md" and anchor not in slugs(dest.read_text(encoding="utf-8")):
            bad.append(f"{target} (no heading #{anchor})")
    return bad


@pytest.mark.parametrize("page", [ROOT / "README.md", *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    assert broken_links(page) == []


def test_a_broken_link_is_found(tmp_path):
    """The link check can fail: a missing page, a missing anchor, and links in code that are
    not links."""
    (tmp_path / "there.md").write_text("# A title -- with dashes\n\n## Cost: `fyan status --cost`\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md) [ok](there.md#a-title-with-dashes) [ok](there.md#a-title----with-dashes)\n"
                    "[ok](there.md#cost-fyan-status-cost) [ok](https://example.org/x.md) `[not](a-link.md)`\n\n"
                    "```\n[not](a-link-either.md)\n```\n\n[gone](missing.md) [gone](there.md#nowhere) ![img](nope.png)\n")
    assert [b.split(" ")[0] for b in broken_links(page)] == ["missing.md", "there.md#nowhere", "nope.png"]


def test_every_page_is_in_the_site_navigation():
    """mkdocs.yml's ``nav`` lists every page of docs/ (the strict build refuses a page left out,
    ``validation.omitted_files``; checked here for a clone without mkdocs)."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", config, re.M))
    assert nav == {str(p.relative_to(DOCS)) for p in PAGES}
    assert re.search(r"^strict: true$", config, re.M) and re.search(r"^docs_dir: docs$", config, re.M)


def test_the_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode("utf-8")) <= README_LIMIT
    headings = re.findall(r"^## (.+)$", readme, re.M)
    assert headings[:2] == ["Quick start", "Installing Lean"] and "Commands" in headings
    # the command table names every command of the parser
    import argparse

    from fyan.cli import build_parser

    [sub] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    table = readme.split("## Commands", 1)[1].split("\n## ", 1)[0]
    assert {name for name in sub.choices if f"`fyan {name}" not in table} == set()


def quick_start(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```sh\n(python3 -m venv .*?)```", text, re.S)][:2]


def test_the_site_home_gives_the_readme_commands():
    """docs/index.md repeats the README's two commands (the site does not include the README);
    they cannot drift apart."""
    readme = quick_start((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(readme) == 2 and quick_start((DOCS / "index.md").read_text(encoding="utf-8")) == readme


def test_ci_builds_the_site_and_checks_the_code_before_the_tests():
    """``.ci/run``: the strict site build, ruff and mypy run before the tests (``set -e`` makes
    each failure fail the run), the site is built outside the repository, and the last line is
    the README's test command."""
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^set -euo pipefail$", script, re.M)
    lines = [line for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    readme = quick_start((ROOT / "README.md").read_text(encoding="utf-8"))
    assert lines[-1] == readme[1]

    def first(pattern: str) -> int:
        return next(i for i, line in enumerate(lines) if re.search(pattern, line))

    build, ruff, mypy = first(r"mkdocs build --strict"), first(r"ruff check fyan"), first(r"mypy fyan")
    assert max(build, ruff, mypy) < len(lines) - 1
    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "[tool.ruff.lint]" in project and "[tool.mypy]" in project  # the checks read their configuration
    site = shlex.split(lines[build].split("mkdocs build", 1)[1])
    assert "--site-dir" in site and not site[site.index("--site-dir") + 1].startswith(("site", "./", "docs"))
