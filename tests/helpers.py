"""Small project factories for tests."""

from __future__ import annotations

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
