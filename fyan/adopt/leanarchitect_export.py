"""LeanArchitect export: the project's Lake package as a LeanArchitect blueprint project.

``export_leanarchitect`` writes one unified diff against the project's Lake package ``lean/``
(apply it with ``git apply`` in a copy of that folder) that turns it into a LeanArchitect project
a person can keep working in (hanwenzhu/LeanArchitect's README, "Instructions"; the attribute's
options as ``Architect/Attribute.lean`` parses them):

* ``lakefile.toml`` requires LeanArchitect (``git = "https://github.com/hanwenzhu/LeanArchitect.git"``,
  ``rev = "main"``, as its README says), unless it already does;
* every **complete** unit's file ``<Lib>/<Unit>/Basic.lean`` imports ``Architect`` and each of its
  root declarations (the frozen ``root`` declarations of the store) carries
  ``@[blueprint "label" (statement := /-- … -/)]`` — merged into an attribute list the declaration
  already has — with the unit's label (its source label, else its id), the document's statement
  and proof text, its title and its environment (``latexEnv``) when it is not the default of
  the declaration's kind, and ``uses :=`` / ``proofUses :=`` naming, as LaTeX labels, the
  dependencies of the dependency DAG that LeanArchitect's inference would miss: those on a unit
  that is not complete (it has no node to infer from) or none of whose root declarations the
  file names (LeanArchitect infers a dependency only from a constant the declaration uses);
* ``blueprint/src/content.tex`` ``\\input``s ``../../.lake/build/blueprint/library/<Lib>`` and, in
  document order, ``\\inputleannode{label}`` for each complete unit and the document's own
  statement and proof for each other unit (an informal node, with its ``\\uses``), under the
  document's headings; the other files of a leanblueprint (``macros/common.tex``, ``web.tex``,
  ``print.tex``, ...) are added when the package has none.

Units complete by adoption are declared in the adopted package, not in ``lean/``: they are
listed (``adopted``) and exported as informal nodes. Text enters a doc comment with ``-/`` and
``/-`` broken by a space (a doc comment cannot hold them), and a Lean string with ``\\`` and ``"``
escaped. Decided from the store (completions, freezes, dependency edges) and the unit files the
gate checked, never from a model.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from pydantic import BaseModel

from fyan.adopt.patch import git_diff
from fyan.errors import ProjectError
from fyan.intake.catalogue import Catalogue
from fyan.lean import declarations
from fyan.lean.header import add_import, imported_modules
from fyan.project import Project
from fyan.specifier.blueprint import (
    MACROS_PRINT,
    MACROS_WEB,
    PLASTEX_CFG,
    PRINT_TEX,
    WEB_TEX,
    _env,
    _labels,
    _LEVELS,
    _proof_body,
    _statement_body,
    _tex_escape,
    render_common,
)
from fyan.intake.tex import REFERENCE_MACROS
from fyan.state.models import UnitStatus
from fyan.state.store import Store

REQUIRE = ('\n[[require]]\nname = "LeanArchitect"\ngit = "https://github.com/hanwenzhu/LeanArchitect.git"\n'
           'rev = "main"\n')


class LeanArchitectReport(BaseModel):
    out: str
    package: str
    nodes: list[str]
    informal: list[str]
    adopted: list[str]
    skipped: list[str]
    uses_added: int
    files: list[str]


def doc_comment(text: str) -> str:
    """``text`` as the inside of a Lean doc comment (``/-- … -/``): ``-/`` and ``/-`` broken by a space."""
    return text.replace("-/", "- /").replace("/-", "/ -").strip()


def lean_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def attribute(label: str, statement: str, proof: str | None, title: str | None, env: str | None,
              uses: list[str], proof_uses: list[str]) -> str:
    """The ``blueprint`` attribute (without ``@[ ]``) with the options given."""
    out = [f"blueprint {lean_string(label)}", f"  (statement := /-- {doc_comment(statement)} -/)"]
    if proof:
        out.append(f"  (proof := /-- {doc_comment(proof)} -/)")
    if title:
        out.append(f"  (title := {lean_string(title)})")
    if env:
        out.append(f"  (latexEnv := {lean_string(env)})")
    if uses:
        out.append(f"  (uses := [{', '.join(lean_string(u) for u in uses)}])")
    if proof_uses:
        out.append(f"  (proofUses := [{', '.join(lean_string(u) for u in proof_uses)}])")
    return "\n".join(out)


def with_attribute(text: str, decl: declarations.Declaration, attr: str) -> str:
    """``text`` with ``attr`` added to ``decl``'s attributes: into the ``@[…]`` on its own line or
    on the line above it, else as a new ``@[…]`` line before it (Lean reads one attribute list)."""
    lines = text.split("\n")
    i = decl.line_start - 1
    if lines[i].lstrip().startswith("@["):
        close = lines[i].index("]")
        lines[i] = lines[i][:close] + ", " + attr.replace("\n", "\n  ") + lines[i][close:]
        return "\n".join(lines)
    above = i - 1
    if above >= 0 and lines[above].startswith("@[") and lines[above].rstrip().endswith("]"):
        line = lines[above].rstrip()
        lines[above] = line[:-1] + ", " + attr.replace("\n", "\n  ") + "]"
        return "\n".join(lines)
    lines.insert(i, "@[" + attr + "]")
    return "\n".join(lines)


def _names_used(text: str, names: list[str]) -> bool:
    shorts = {n for full in names for n in (full, full.rsplit(".", 1)[-1])}
    return any(re.search(r"(?<![\w.'])" + re.escape(n) + r"(?![\w'])", text) for n in shorts)


def export_leanarchitect(project: Project, out: Path | None = None) -> LeanArchitectReport:
    """Write the patch (module docstring) to ``out`` (default ``<project>/export/leanarchitect.patch``).
    Raises ``ProjectError`` when the project was not ingested or its Lake package is missing."""
    store = Store(project.paths.db)
    try:
        return _export(project, store, out)
    finally:
        store.close()


def _export(project: Project, store: Store, out: Path | None) -> LeanArchitectReport:
    raw = store.meta("catalogue") if store.exists else None
    if raw is None:
        raise ProjectError(f"{project.paths.root}: the project has not been ingested yet",
                           hint=f"run `fyan run {shlex.quote(str(project.paths.root))}` first")
    pkg = project.paths.lean
    if not (pkg / "lakefile.toml").is_file():
        raise ProjectError(f"{pkg}: the project's Lake package is missing",
                           hint=f"run `fyan run {shlex.quote(str(project.paths.root))}` to create it")
    catalogue = Catalogue.model_validate_json(raw)
    units = store.units()
    views = store.views(project.config.scheduler.attempts_per_stage)
    labels = _labels(units, catalogue)
    nested = {u.statements[0]: labels[u.id] for u in units}
    defined = set(labels.values()) | {lab for u in units for i in u.statements for lab in catalogue.statements[i].labels}
    macros = set(REFERENCE_MACROS) | {r.macro for s in catalogue.statements for r in s.references
                                      if r.macro not in ("text", "link", "uses")}
    macros.discard("uses")
    lib = project.config.lean_lib
    deps: dict[str, dict[str, bool]] = {}
    for d in store.deps():
        scopes = deps.setdefault(d.unit, {})
        scopes[d.depends_on] = scopes.get(d.depends_on, True) and d.in_proof
    roots = {u.id: [f.decl for f in store.freezes(u.id) if f.role == "root"] for u in units}
    complete = {u.id for u in units if views[u.id].status is UnitStatus.COMPLETE}
    adopted = [u.id for u in units if u.id in complete and views[u.id].adopted]
    parts: list[str] = []
    files: list[str] = []
    nodes: list[str] = []
    skipped: list[str] = []
    uses_added = 0

    lakefile = (pkg / "lakefile.toml").read_text(encoding="utf-8")
    if not re.search(r'name\s*=\s*"LeanArchitect"', lakefile):
        parts.append(git_diff("lakefile.toml", lakefile, lakefile.rstrip("\n") + "\n" + REQUIRE))
        files.append("lakefile.toml")

    for u in units:
        if u.id not in complete or u.id in adopted:
            continue
        rel = "/".join([*lib.split("."), *u.module.split("."), "Basic.lean"])
        path = pkg / rel
        if not path.is_file() or not roots[u.id]:
            skipped.append(f"{u.id}: " + (f"{rel} is not in the package" if not path.is_file() else "no root declaration"))
            continue
        old = path.read_text(encoding="utf-8")
        text = old if "Architect" in imported_modules(old) else add_import(old, "Architect")
        first = catalogue.statements[u.statements[0]]
        statement = "\n\n".join(b for b in (_statement_body(catalogue.statements[i], catalogue,
                                                            u.label if i == u.statements[0] else None, macros, defined,
                                                            nested) for i in u.statements) if b.strip())
        proof = _proof_body(first, catalogue, macros, defined, nested) or None
        missed: dict[bool, list[str]] = {False: [], True: []}
        for dep, in_proof in sorted(deps.get(u.id, {}).items()):
            if dep not in complete or dep in adopted or not _names_used(old, roots.get(dep, [])):
                missed[in_proof].append(labels[dep])
        uses_added += len(missed[False]) + len(missed[True])
        placed = 0
        for name in roots[u.id]:
            decl = declarations.find(declarations.scan(text), name)
            if decl is None:
                skipped.append(f"{u.id}: {name} not found in {rel}")
                continue
            default = "theorem" if decl.kind == "theorem" else "definition"
            env = _env(u.kind)
            attr = attribute(labels[u.id], statement, proof if decl.kind == "theorem" else None, u.title,
                             env if env != default else None, missed[False], missed[True])
            text = with_attribute(text, decl, attr)
            placed += 1
        if placed:
            parts.append(git_diff(rel, old, text))
            files.append(rel)
            nodes.append(u.id)

    content = _content(project, catalogue, units, labels, set(nodes), deps, macros, defined, nested)
    written = {"blueprint/src/content.tex": content,
               "blueprint/src/macros/common.tex": render_common(catalogue, [u.kind for u in units])}
    thms = "+".join(dict.fromkeys(_env(u.kind) for u in units)) or "theorem"
    title = _tex_escape(project.name)
    for rel, body in {"blueprint/src/web.tex": WEB_TEX.format(thms=thms, title=title),
                      "blueprint/src/print.tex": PRINT_TEX.format(title=title),
                      "blueprint/src/macros/web.tex": MACROS_WEB, "blueprint/src/macros/print.tex": MACROS_PRINT,
                      "blueprint/src/plastex.cfg": PLASTEX_CFG}.items():
        if not (pkg / rel).exists():
            written[rel] = body
    for rel, body in written.items():
        old_text = (pkg / rel).read_text(encoding="utf-8") if (pkg / rel).is_file() else None
        if old_text != body:
            parts.append(git_diff(rel, old_text, body))
            files.append(rel)
    out = out or project.paths.root / "export" / "leanarchitect.patch"
    out.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# Fyan export to LeanArchitect for {pkg}: apply in a copy of that folder with `git apply`, then "
              "`lake update LeanArchitect && lake build :blueprint` and `leanblueprint web`.\n")
    out.write_text(header + "".join(parts), encoding="utf-8")
    informal = [u.id for u in units if u.id not in set(nodes)]
    return LeanArchitectReport(out=str(out), package=str(pkg), nodes=nodes, informal=informal, adopted=adopted,
                               skipped=skipped, uses_added=uses_added, files=files)


def _content(project: Project, catalogue: Catalogue, units, labels: dict[str, str], nodes: set[str],
             deps: dict[str, dict[str, bool]], macros: set[str], defined: set[str], nested: dict[int, str]) -> str:
    """``content.tex``: the library's generated file, then each unit in document order, a node
    by ``\\inputleannode`` and an informal unit as the document's own statement and proof."""
    out = ["% Written by `fyan export leanarchitect`: the nodes come from the @[blueprint] attributes in Lean",
           "% (`lake build :blueprint` generates them); the other statements are the document's own.",
           f"\\input{{../../.lake/build/blueprint/library/{project.config.lean_lib}}}", ""]
    sections = [catalogue.statements[u.statements[0]].section or [] for u in units]
    if not any(sections):
        out += [f"\\chapter{{{_tex_escape(project.name)}}}", ""]
    shown: list[str] = []
    for u, path in zip(units, sections):
        same = 0
        while same < min(len(shown), len(path)) and shown[same] == path[same]:
            same += 1
        for depth in range(same, len(path)):
            out += [f"\\{_LEVELS[min(depth, len(_LEVELS) - 1)]}{{{_tex_escape(path[depth])}}}", ""]
        shown = list(path)
        if u.id in nodes:
            out += [f"\\inputleannode{{{labels[u.id]}}}", ""]
            continue
        first = catalogue.statements[u.statements[0]]
        env = _env(u.kind)
        stmt_uses = sorted(labels[d] for d, p in deps.get(u.id, {}).items() if not p)
        proof_uses = sorted(labels[d] for d, p in deps.get(u.id, {}).items() if p)
        out.append(f"\\begin{{{env}}}" + (f"[{u.title}]" if u.title else ""))
        out.append(f"  \\label{{{labels[u.id]}}}")
        if stmt_uses:
            out.append(f"  \\uses{{{', '.join(stmt_uses)}}}")
        out.append(_statement_body(first, catalogue, u.label, macros, defined, nested))
        out.append(f"\\end{{{env}}}")
        proof = _proof_body(first, catalogue, macros, defined, nested)
        if proof or proof_uses:
            out.append("\\begin{proof}")
            if proof_uses:
                out.append(f"  \\uses{{{', '.join(proof_uses)}}}")
            out.append(proof)
            out.append("\\end{proof}")
        out.append("")
    return "\n".join(out)
