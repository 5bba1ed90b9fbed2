"""Blueprint export: the project's units and DAG as a leanblueprint source.

``export_blueprint`` writes, in the output folder (default ``<project>/blueprint/src``), the
files of a leanblueprint project (the layout ``leanblueprint new`` creates):

* ``content.tex`` — always rewritten: the document's chapters and sections (the headings each
  unit stands under, as intake recorded them: ``\\chapter``, ``\\section``, ... by depth; one
  chapter named after the project for a document without headings), and one theorem-like
  environment per unit, in document order, with ``\\label`` (the source's label, or the unit id for a statement without one),
  ``\\lean{...}`` (the unit's frozen declarations, from the store), ``\\leanok`` (in the
  statement once the statement is frozen, in the proof once the completion gate passed),
  ``\\uses{...}`` (statement-level dependencies in the statement, proof-level ones in the proof)
  and the statement text; then the document's proof, if any;
* ``macros/common.tex`` — always rewritten: ``\\newtheorem`` for every unit kind and the
  document's own macro definitions (so the statements render);
* ``web.tex``, ``print.tex``, ``macros/web.tex``, ``macros/print.tex``, ``plastex.cfg`` — only
  when missing (a blueprint folder you already have keeps its own).

Checked by rendering with leanblueprint 0.0.20 / plasTeX 3.1 (``plastex -c plastex.cfg web.tex``;
plasTeX finds ``macros/common`` through TeX Live's ``kpsewhich``, as for any leanblueprint).

Inside statement and proof texts the blueprint macros of the source (``\\uses``, ``\\lean``,
``\\leanok``, ``\\mathlibok``, ``\\proves``, the unit's own ``\\label``) are removed and written
again from the store; a reference to a label that the export does not define (a section, a
remark that is not a unit) becomes ``\\texttt{label}``, so leanblueprint never shows "??" and
every ``\\uses`` resolves. PDF text is escaped for TeX; Markdown emphasis becomes
``\\emph``/``\\textbf`` and links to anchors become ``\\ref``; a LaTeX environment in a Markdown
document is exported as TeX, like a TeX document's, and a statement under a printed heading
(``**Theorem 1.**``, ``Lemma (name)``) without its heading.

Round trip: reading ``content.tex`` back with Fyan's TeX intake gives the same units (ids,
kinds, document order) and the same edges (unit, dependency, statement/proof). Raises
``ProjectError`` when the project has not been ingested.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from pydantic import BaseModel

from fyan.errors import ProjectError
from fyan.intake.catalogue import Catalogue, Statement
from fyan.intake.numbered import line_heading
from fyan.intake.plaintext import TEX_EMPHASIS
from fyan.intake.tex import BLUEPRINT_MACROS, REFERENCE_MACROS
from fyan.project import Project
from fyan.specifier.problem import comment_field
from fyan.state.models import UnitRecord, UnitStatus
from fyan.state.store import Store

#: the sectioning command of each depth of a unit's headings (``Statement.section``, outermost
#: first): a leanblueprint is a book, so the outermost heading is a chapter
_LEVELS = ("chapter", "section", "subsection", "subsubsection", "paragraph")

_DISPLAY_NAMES = {"theorem": "Theorem", "lemma": "Lemma", "proposition": "Proposition", "corollary": "Corollary",
                  "definition": "Definition", "claim": "Claim", "conjecture": "Conjecture"}


class BlueprintReport(BaseModel):
    out: str
    written: list[str]
    kept: list[str]
    units: int
    uses: int
    leanok_statements: int
    leanok_proofs: int
    lean_declarations: int


def _env(kind: str) -> str:
    return re.sub(r"[^a-z]", "", kind.lower()) or "statement"


def _tex_escape(text: str) -> str:
    repl = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
            "^": r"\^{}", "_": r"\_", "%": r"\%", "~": r"\textasciitilde{}"}
    return "".join(repl.get(c, c) for c in text)


def _inner_tex(body: str) -> str:
    """The content of a verbatim ``\\begin{env}[title] ... \\end{env}``."""
    m = re.match(r"\s*\\begin\s*\{[^}]*\}", body)
    if m is None:
        return body
    i = m.end()
    rest = body[i:]
    stripped = rest.lstrip()
    if stripped.startswith("["):
        depth = 0
        for j, c in enumerate(stripped):
            depth += {"[": 1, "]": -1}.get(c, 0)
            if depth == 0:
                rest = stripped[j + 1 :]
                break
    end = rest.rfind("\\end")
    return rest[:end] if end >= 0 else rest


def _remove_blueprint_macros(text: str, own_label: str | None) -> str:
    text = re.sub(r"\\(?:uses|lean|proves|discussion)\s*\{[^{}]*\}", "", text)
    text = re.sub(r"\\(?:leanok|mathlibok|notready)(?![A-Za-z@])", "", text)
    if own_label is not None:
        text = re.sub(r"\\label\s*\{\s*" + re.escape(own_label) + r"\s*\}", "", text)
    return text


def _rewrite_references(text: str, macros: set[str], defined: set[str]) -> str:
    """Keep references to ``defined`` labels; a reference to any other label becomes its name in
    typewriter type (the whole macro call when none of its labels is defined)."""
    if not macros:
        return text
    names = "|".join(sorted((re.escape(m) for m in macros), key=len, reverse=True))
    pattern = re.compile(r"\\(" + names + r")(?![A-Za-z@])(\*?)((?:\s*\[[^\]]*\])*)\s*\{([^{}]*)\}")

    def fix(m: re.Match) -> str:
        labels = [x.strip() for x in m.group(4).split(",") if x.strip()]
        known = [x for x in labels if x in defined]
        unknown = [x for x in labels if x not in defined]
        if not unknown:
            return m.group(0)
        shown = ", ".join(r"\texttt{" + _tex_escape(x) + "}" for x in unknown)
        if not known:
            return shown
        return f"\\{m.group(1)}{m.group(2)}{m.group(3)}{{{','.join(known)}}} ({shown})"

    return pattern.sub(fix, text)


def _markdown_to_tex(text: str, defined: set[str]) -> str:
    text = re.sub(r"^\s{0,3}(?:#{1,6}\s+|>\s?)", "", text, flags=re.MULTILINE)
    text = re.sub(r"\{#[A-Za-z][\w:.-]*\}|<a\s+(?:id|name)\s*=\s*[\"'][^\"']+[\"']\s*/?>(?:</a>)?", "", text)

    def link(m: re.Match) -> str:
        anchor = m.group(2)
        return f"{m.group(1)} (\\ref{{{anchor}}})" if anchor in defined else m.group(1)

    text = re.sub(r"\[([^\]]*)\]\(#([^)\s]+)\)", link, text)
    text = re.sub(r"\*\*([^*]+)\*\*|__([^_]+)__", lambda m: r"\textbf{" + (m.group(1) or m.group(2)) + "}", text)
    text = re.sub(r"(?<![\w*])\*([^*$]+)\*(?!\*)", r"\\emph{\1}", text)
    # outside math, characters TeX treats specially in running text
    parts = re.split(r"(\$\$.*?\$\$|\$[^$]*\$)", text, flags=re.DOTALL)
    return "".join(part if i % 2 else re.sub(r"(?<!\\)([%&#])", r"\\\1", part) for i, part in enumerate(parts))


def _heading_free(stmt: Statement) -> str:
    """A statement's text after its printed heading ("Theorem 2.3 (Name).", "**Lemma 1.**",
    "Lemma (name)" on its own line, ``\\textbf{Lemma 3.}``)."""
    text = re.sub(r"^\s{0,3}(?:#{1,6}\s+|>\s?)", "", stmt.body.strip())
    m = re.match(r"(\*\*|__|\*|_)(.+?)\1", text) or TEX_EMPHASIS.match(text)
    if m is not None:
        text = (m.group(2) if m.re is not TEX_EMPHASIS else m.group("inner") or m.group("inner2")) + text[m.end():]
    head = line_heading(text)
    return text[head.end:].strip() if head is not None and head.kind != "proof" else text


def _is_environment(body: str) -> bool:
    """Is ``body`` a verbatim LaTeX environment (a TeX document's statement, or one written in
    LaTeX inside a Markdown document)?"""
    return re.match(r"\s*\\begin\s*\{", body) is not None


def _statement_body(stmt: Statement, catalogue: Catalogue, own_label: str | None, macros: set[str],
                    defined: set[str], nested: dict[int, str]) -> str:
    if _is_environment(stmt.body) and catalogue.format != "pdf":
        text = _remove_blueprint_macros(_inner_tex(_without_nested(stmt.body, stmt, catalogue, nested)), own_label)
        return _rewrite_references(text, macros, defined).strip("\n")
    text = _heading_free(stmt)
    if catalogue.format == "pdf":
        return _tex_escape(text)
    if catalogue.format == "tex":  # plain-text headings in a TeX file: the text is TeX
        return _rewrite_references(_remove_blueprint_macros(text, own_label), macros, defined).strip("\n")
    return _markdown_to_tex(text, defined)


def _without_nested(text: str, stmt: Statement, catalogue: Catalogue, labels: dict[int, str]) -> str:
    """``text`` (a statement's or proof's TeX) with the statements nested in it, which are units
    of their own in the export, replaced by a reference to them (their proofs dropped)."""
    for child in catalogue.statements:
        if child.parent != stmt.index or child.index not in labels:
            continue
        text = text.replace(child.body, f"(\\cref{{{labels[child.index]}}})")
        if child.proof is not None:
            text = text.replace(child.proof.body, "")
    return text


def _proof_body(stmt: Statement, catalogue: Catalogue, macros: set[str], defined: set[str],
                nested: dict[int, str]) -> str:
    if stmt.proof is None:
        return ""
    if _is_environment(stmt.proof.body) and catalogue.format != "pdf":
        body = _without_nested(stmt.proof.body, stmt, catalogue, nested)
        text = _remove_blueprint_macros(_inner_tex(body), None)
        return _rewrite_references(text, macros, defined).strip("\n")
    text = re.sub(r"^\s*(?:\*\*|__|\*|_)?Proof(?:\s+of\s[^.:]*)?\s*[.:)]?(?:\*\*|__|\*|_)?\s*", "",
                  stmt.proof.body.strip())
    if catalogue.format == "tex":
        return _rewrite_references(_remove_blueprint_macros(text, None), macros, defined).strip("\n")
    return _tex_escape(text) if catalogue.format == "pdf" else _markdown_to_tex(text, defined)


def _labels(units: list[UnitRecord], catalogue: Catalogue) -> dict[str, str]:
    """Export label of each unit: its source label, else its id."""
    taken = set(catalogue.labels)
    out: dict[str, str] = {}
    for u in units:
        label = u.label or u.id
        if u.label is None and label in taken:
            label = f"fyan-{u.id}"
        out[u.id] = label
    return out


def render_content(project: Project, store: Store) -> tuple[str, dict[str, int]]:
    """The text of ``content.tex`` and counts (uses, leanok statements/proofs, declarations)."""
    raw = store.meta("catalogue")
    if raw is None:
        raise ProjectError(f"{project.paths.root}: the project has not been ingested yet",
                           hint=f"run `fyan run {shlex.quote(str(project.paths.root))}` first")
    catalogue = Catalogue.model_validate_json(raw)
    units = store.units()
    views = store.views(project.config.scheduler.attempts_per_stage)
    labels = _labels(units, catalogue)
    nested = {u.statements[0]: labels[u.id] for u in units}  # statement index -> its export label
    exported = {i for u in units for i in u.statements}
    defined = set(labels.values())
    for i in exported:
        defined |= set(catalogue.statements[i].labels)
    macros = set(REFERENCE_MACROS) | {r.macro for s in catalogue.statements for r in s.references
                                      if r.macro not in ("text", "link", "uses")}
    macros.discard("uses")
    deps: dict[str, dict[str, bool]] = {}
    for d in store.deps():
        scopes = deps.setdefault(d.unit, {})
        scopes[d.depends_on] = scopes.get(d.depends_on, True) and d.in_proof
    counts = {"uses": 0, "leanok_statements": 0, "leanok_proofs": 0, "lean_declarations": 0}
    out = [
        "% Written by `fyan export blueprint` from the project's state: do not edit by hand,",
        "% export again instead. Statements come from the source document; \\lean, \\leanok and",
        "% \\uses come from Fyan's store (frozen declarations, completion gate, dependency DAG).",
        "",
    ]
    sections = [catalogue.statements[u.statements[0]].section or [] for u in units]
    if not any(sections):  # a document without headings: one chapter named after the project
        out += [f"\\chapter{{{_tex_escape(project.name)}}}", ""]
    shown: list[str] = []
    for u, path in zip(units, sections):
        same = 0  # the document's headings above this unit that are already written
        while same < min(len(shown), len(path)) and shown[same] == path[same]:
            same += 1
        for depth in range(same, len(path)):
            out += [f"\\{_LEVELS[min(depth, len(_LEVELS) - 1)]}{{{_tex_escape(path[depth])}}}", ""]
        shown = list(path)
        view = views.get(u.id)
        complete = view is not None and view.status is UnitStatus.COMPLETE
        freezes = [f for f in store.freezes(u.id) if f.role in ("root", "bridge")]
        decls = list(dict.fromkeys(f.decl for f in freezes))
        stmt_uses = sorted(labels[d] for d, in_proof in deps.get(u.id, {}).items() if not in_proof)
        proof_uses = sorted(labels[d] for d, in_proof in deps.get(u.id, {}).items() if in_proof)
        first = catalogue.statements[u.statements[0]]
        env = _env(u.kind)
        tex_title = catalogue.format == "tex" or (catalogue.format == "markdown" and _is_environment(first.body))
        title = f"[{u.title if tex_title else _tex_escape(u.title)}]" if u.title else ""
        out.append(f"% {comment_field(f'unit {u.id} ({u.provenance})')}")
        out.append(f"\\begin{{{env}}}{title}")
        out.append(f"  \\label{{{labels[u.id]}}}")
        if decls:
            out.append(f"  \\lean{{{', '.join(decls)}}}")
            counts["lean_declarations"] += len(decls)
        if decls or complete:
            out.append("  \\leanok")
            counts["leanok_statements"] += 1
        if stmt_uses:
            out.append(f"  \\uses{{{', '.join(stmt_uses)}}}")
            counts["uses"] += len(stmt_uses)
        bodies = [_statement_body(catalogue.statements[i], catalogue, u.label if i == u.statements[0] else None,
                                  macros, defined, nested) for i in u.statements]
        out.append("\n\n".join(b for b in bodies if b.strip()))
        out.append(f"\\end{{{env}}}")
        proof = _proof_body(first, catalogue, macros, defined, nested)
        if proof or proof_uses or complete:
            out.append("\\begin{proof}")
            if proof_uses:
                out.append(f"  \\uses{{{', '.join(proof_uses)}}}")
                counts["uses"] += len(proof_uses)
            if complete:
                out.append("  \\leanok")
                counts["leanok_proofs"] += 1
            out.append(proof or "  See the Lean formalization.")
            out.append("\\end{proof}")
        out.append("")
    return "\n".join(out), counts


def render_common(catalogue: Catalogue, kinds: list[str]) -> str:
    lines = ["% Written by `fyan export blueprint`: theorem environments and the document's macros.", ""]
    envs = list(dict.fromkeys(_env(k) for k in kinds))
    if "theorem" in envs:  # the shared counter is the theorem counter, as in leanblueprint's template
        envs.remove("theorem")
        envs.insert(0, "theorem")
    first = envs[0] if envs else "theorem"
    for i, env in enumerate(envs):
        name = _DISPLAY_NAMES.get(env, env.capitalize())
        if env == "definition":
            lines.append("\\theoremstyle{definition}")
        lines.append(f"\\newtheorem{{{env}}}{{{name}}}" if i == 0 else f"\\newtheorem{{{env}}}[{first}]{{{name}}}")
        if env == "definition":
            lines.append("\\theoremstyle{plain}")
    lines.append("")
    for m in catalogue.macros:
        name = re.match(r"\\[A-Za-z]+\*?\s*\{?\s*\\([A-Za-z@]+)", m)
        if name is not None and name.group(1) in BLUEPRINT_MACROS:
            continue
        if "@" in m or "\\newtheorem" in m:
            continue
        lines.append(m)
    return "\n".join(lines) + "\n"


WEB_TEX = """% Web version of the blueprint (plasTeX + leanblueprint). Written by `fyan export blueprint`
% when missing; edit it freely, Fyan does not overwrite it.
\\documentclass{{report}}

\\usepackage{{amssymb, amsthm, amsmath}}
\\usepackage{{hyperref}}
\\usepackage[capitalize]{{cleveref}}
\\usepackage[showmore, dep_graph, thms={thms}]{{blueprint}}

\\input{{macros/common}}
\\input{{macros/web}}

\\title{{{title}}}

\\begin{{document}}
\\maketitle
\\input{{content}}
\\end{{document}}
"""

PRINT_TEX = """% Printable version of the blueprint (pdflatex/xelatex). Written by `fyan export blueprint`
% when missing; edit it freely, Fyan does not overwrite it.
\\documentclass[a4paper]{{report}}

\\usepackage{{amssymb, amsthm, amsmath, mathtools}}
\\usepackage{{expl3}}
\\usepackage[colorlinks=true]{{hyperref}}
\\usepackage[capitalize]{{cleveref}}

\\input{{macros/common}}
\\input{{macros/print}}

\\title{{{title}}}

\\begin{{document}}
\\maketitle
\\input{{content}}
\\end{{document}}
"""

PLASTEX_CFG = """# plasTeX configuration for `leanblueprint web` (or `plastex -c plastex.cfg web.tex`).
# Written by `fyan export blueprint` when missing; edit it freely.
[general]
renderer=HTML5
copy-theme-extras=yes
plugins=plastexdepgraph plastexshowmore leanblueprint

[document]
toc-depth=3
toc-non-files=True

[files]
directory=../web/
split-level=0

[html5]
localtoc-level=0
mathjax-dollars=False
"""

MACROS_WEB = "% Macros for the web version only (plasTeX provides the blueprint macros).\n"

MACROS_PRINT = """% Macros for the printed version only: the blueprint macros do nothing on paper, except
% that \\uses and \\proves still check that their labels exist (an invisible \\ref).
\\newcommand{\\lean}[1]{}
\\newcommand{\\discussion}[1]{}
\\newcommand{\\leanok}{}
\\newcommand{\\mathlibok}{}
\\newcommand{\\notready}{}
\\ExplSyntaxOn
\\NewDocumentCommand{\\uses}{m}{\\clist_map_inline:nn{#1}{\\vphantom{\\ref{##1}}}\\ignorespaces}
\\NewDocumentCommand{\\proves}{m}{\\clist_map_inline:nn{#1}{\\vphantom{\\ref{##1}}}\\ignorespaces}
\\ExplSyntaxOff
"""


def export_blueprint(project: Project, out: Path | None = None) -> BlueprintReport:
    """Write the blueprint of ``project`` into ``out`` (default ``<project>/blueprint/src``);
    see the module docstring. Raises ``ProjectError`` before anything is written when the
    project has no state."""
    store = Store(project.paths.db)
    if not store.exists:
        raise ProjectError(f"{project.paths.root}: the project has not been ingested yet",
                           hint=f"run `fyan run {shlex.quote(str(project.paths.root))}` first")
    try:
        content, counts = render_content(project, store)
        catalogue = Catalogue.model_validate_json(store.meta("catalogue") or "{}")
        kinds = [u.kind for u in store.units()]
    finally:
        store.close()
    out = (out or project.paths.root / "blueprint" / "src").resolve()
    thms = "+".join(dict.fromkeys(_env(k) for k in kinds)) or "theorem"
    title = _tex_escape(project.name)
    always = {"content.tex": content, "macros/common.tex": render_common(catalogue, kinds)}
    if_missing = {"web.tex": WEB_TEX.format(thms=thms, title=title), "print.tex": PRINT_TEX.format(title=title),
                  "macros/web.tex": MACROS_WEB, "macros/print.tex": MACROS_PRINT, "plastex.cfg": PLASTEX_CFG}
    written, kept = [], []
    for rel, text in always.items():
        _write(out / rel, text)
        written.append(rel)
    for rel, text in if_missing.items():
        if (out / rel).exists():
            kept.append(rel)
        else:
            _write(out / rel, text)
            written.append(rel)
    return BlueprintReport(out=str(out), written=written, kept=kept, units=len(kinds), **counts)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
