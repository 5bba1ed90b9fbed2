"""Small project factories for tests, and polling."""

from __future__ import annotations

import time
from pathlib import Path

from fyan.project import Project
from fyan.specifier.ingest import ingest
from fyan.state.gateway import Gateway

CHAIN_TEX = r"""\begin{definition}\label{def:a} An integer is \textbf{nice} if it is even.\end{definition}
\begin{lemma}\label{lem:b} Every nice integer is even. \end{lemma}
\begin{theorem}\label{thm:c} By Lemma~\ref{lem:b}, 4 is even. \end{theorem}
"""


def make_project(root: Path, tex: str = CHAIN_TEX, extra_toml: str = "") -> Project:
    (root / "source").mkdir(parents=True, exist_ok=True)
    (root / "source" / "doc.tex").write_text(tex, encoding="utf-8")
    (root / "fyan.toml").write_text(
        f'[project]\nname = "t"\nsource = "source/doc.tex"\n{extra_toml}', encoding="utf-8"
    )
    return Project.open(root)


def ingested(root: Path, tex: str = CHAIN_TEX, checks=None, extra_toml: str = "") -> tuple[Project, Gateway]:
    project = make_project(root, tex, extra_toml)
    gateway = Gateway(project, checks)
    ingest(project, gateway)
    return project, gateway


def wait_for(predicate, timeout: float = 90.0, step: float = 0.1):
    """Poll ``predicate`` until it returns something true (returned); AssertionError after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("timed out")
