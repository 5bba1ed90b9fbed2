"""``problem.tex``: a unit's statement with a provenance block written by code.

The provenance block is a run of TeX comment lines between fixed markers; models never write
it: ``render_problem`` writes it at ingest, and ``with_provenance`` puts the
code-written block back on a statement text a model rewrote (any block the model wrote is
dropped). The statement text below it is the verbatim environment from the source (for a PDF,
the text of the statement as extracted from the text layer).

Between the two, a **context block** (``CONTEXT_BEGIN`` … ``CONTEXT_END``, also written by code
only) carries what the statement cites but does not contain: a displayed formula
it cites from elsewhere (``\\eqref{eq:S}`` to a display in the running text or in another
unit), and the non-unit environments it refers to (remark, example, situation, notation,
convention, setup, and the document's own non-unit environments), each after a comment line
naming the reference and the source lines, verbatim. A referenced one that cannot be carried
(too long, not a display or an environment) is a ``context`` warning at ingest
(``context_items``). Text enters ``problem.tex`` only through ``render_problem``.

The provenance block's grammar, checked by ``fyan.specifier.lints``::

    % --- fyan provenance (written by Fyan from the source; do not edit) ---
    % unit: <unit id>
    % kind: <kind>
    % source: <file>, lines <a>-<b>          (TeX, Markdown)
    % source: <file>, page <p>, characters <a>-<b>                      (PDF)
    % source: <file>, pages <p>-<q>, characters <a> (page <p>) to <b> (page <q>)
    % label: ... / % title: ... / % lean (from the source): ... / % text: ...   (optional)
    % depends on: nothing | <unit> (<origin>, statement|proof; <evidence>)   (one per edge)
    % mentions: <unit> (<origin>, statement|proof; <evidence>; <why not a dependency>)  (optional)
    % --- end provenance ---
"""

from __future__ import annotations

from pydantic import BaseModel

from fyan.intake.catalogue import Catalogue, IntakeWarning, Statement
from fyan.specifier.dag import Edge
from fyan.specifier.units import UnitSpec

BEGIN = "% --- fyan provenance (written by Fyan from the source; do not edit) ---"
END = "% --- end provenance ---"
#: Prefix of source paths in a project (``source/`` holds the document's files).
SOURCE_PREFIX = "source/"
CONTEXT_BEGIN = "% --- context cited by the statement (from the source; not part of the statement) ---"
CONTEXT_END = "% --- end context ---"
#: Longest cited text carried as context, lines.
MAX_CONTEXT_LINES = 80
#: Environments whose labels are never carried (a figure, a table, a section heading).
_NOT_CONTEXT_ENVS = ("figure", "table", "figure*", "table*", "tikzpicture", "algorithm", "subfigure", "wrapfigure")


PDF_NOTE = "% text: from the PDF's text layer (formulas may be flattened: check the PDF)"
#: The marker lines of the blocks code writes; a source line that reads as one is escaped.
MARKERS = (BEGIN, END, CONTEXT_BEGIN, CONTEXT_END)


def comment_field(text: str) -> str:
    """``text`` made safe for the rest of one ``%`` comment line: every line break and run of
    white space (``\\n``, ``\\r``, form feed, the Unicode line and paragraph separators, ...,
    everything ``str.split`` splits on) is one space, none at the ends. A comment line ends
    only at its line end, so nothing else in it (``%``, braces, a ``\\`` at its end) can reach
    the text after it; a line break left in would put the rest of the field outside the
    comment, as TeX text."""
    return " ".join(text.split())


def verbatim_lines(text: str) -> str:
    """Source text placed verbatim beside code-written blocks (a statement, a cited display),
    with every line that reads as one of the block markers (``MARKERS``, spaces around it
    ignored: what the lints and ``strip_provenance`` look for) made a comment of a comment
    (``%`` before it): TeX reads both the same (a comment), and the block around it keeps its
    one start and one end. Line ends are normalised to ``\\n`` (a lone ``\\r`` is one too)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join("%" + ln if ln.strip() in MARKERS else ln for ln in lines)


def provenance_block(unit: UnitSpec, catalogue: Catalogue, deps: list[Edge], source_prefix: str,
                     mentions: list[Edge] | None = None) -> str:
    """The code-written provenance block of ``unit`` (markers included, no final newline).

    ``source_prefix`` is prepended to catalogue paths so the block names files relative to
    the project folder (for example ``source/``); ``mentions`` (the unit's references kept as
    mentions) are listed after the dependencies.
    """
    f = comment_field
    lines = [BEGIN, f"% unit: {f(unit.id)}", f"% kind: {f(unit.kind)}"]
    for i in unit.statements:
        s = catalogue.statements[i]
        p = s.provenance
        lines.append(f"% source: {f(source_prefix + p.describe())}")
        if p.page_start is not None:
            lines.append(PDF_NOTE)
        if s.label:
            lines.append(f"% label: {f(s.label)}")
        if s.title:
            lines.append(f"% title: {f(s.title)}")
        if s.lean_names:
            lines.append(f"% lean (from the source): {f(', '.join(s.lean_names))}")
    if deps:
        for e in sorted(deps, key=lambda e: (e.depends_on, e.origin)):
            scope = "proof" if e.in_proof else "statement"
            lines.append(f"% depends on: {f(e.depends_on)} ({f(e.origin)}, {scope}; {f(e.evidence)})")
    else:
        lines.append("% depends on: nothing")
    for e in sorted(mentions or [], key=lambda e: (e.depends_on, e.origin, e.evidence)):
        scope = "proof" if e.in_proof else "statement"
        lines.append(f"% mentions: {f(e.depends_on)} ({f(e.origin)}, {scope}; {f(e.evidence)}; "
                     f"{f(e.note or 'a mention')})")
    lines.append(END)
    return "\n".join(lines)


class ContextItem(BaseModel):
    """Cited material carried into ``problem.tex``: the reference as written, what it is, where
    (``file, lines a-b`` with the project prefix) and its verbatim text."""

    reference: str
    what: str
    where: str
    text: str


def context_items(unit: UnitSpec, catalogue: Catalogue, unit_kinds: list[str], source_prefix: str
                  ) -> tuple[list[ContextItem], list[IntakeWarning]]:
    """What ``unit``'s statements cite but do not contain (module docstring), following the
    references of carried environments one step further; and a ``context`` warning for each
    cited display or environment that cannot be carried."""
    kinds = set(unit_kinds)
    own = set(unit.statements)
    items: dict[str, ContextItem] = {}
    warnings: list[IntakeWarning] = []
    queue: list[tuple[Statement, int]] = [(catalogue.statements[i], 0) for i in unit.statements]
    while queue:
        stmt, depth = queue.pop(0)
        for ref in stmt.references:
            if ref.in_proof or ref.macro == "uses":
                continue
            site = catalogue.labels.get(ref.label)
            if site is None or ref.label in items:
                continue
            if site.display is not None:
                display = catalogue.displays[site.display]
                if display.statement_index in own and not display.in_proof:
                    continue  # the statement's own display
                item = ContextItem(reference=ref.shown, what=f"display ({display.env})",
                                   where=f"{source_prefix}{display.provenance.describe()}", text=display.body)
            elif site.statement_index is not None:
                other = catalogue.statements[site.statement_index]
                if other.kind in kinds or site.statement_index in own:
                    continue  # another unit (a dependency edge), or itself
                if site.in_proof:
                    continue  # a label inside its proof
                item = ContextItem(reference=ref.shown, what=f"{other.kind} ({other.env})",
                                   where=f"{source_prefix}{other.provenance.describe()}", text=other.body)
                if depth < 1:
                    queue.append((other, depth + 1))
            else:
                if site.section or site.env in _NOT_CONTEXT_ENVS or ref.macro == "text":
                    continue
                if ref.macro in ("eqref",) or site.env is not None:
                    warnings.append(IntakeWarning(
                        code="context", where=ref.where,
                        message=f"{ref.shown} in {unit.id}: the label at {site.file}:{site.line} is not on a display or "
                        "a theorem-like environment; its text is not carried into problem.tex"))
                continue
            lines = item.text.count("\n") + 1
            if lines > MAX_CONTEXT_LINES:
                warnings.append(IntakeWarning(
                    code="context", where=ref.where,
                    message=f"{ref.shown} in {unit.id}: the cited {item.what} at {item.where} has {lines} lines "
                    f"(more than {MAX_CONTEXT_LINES}); not carried into problem.tex"))
                continue
            items[ref.label] = item
    return list(items.values()), warnings


def context_block(items: list[ContextItem]) -> str:
    """The code-written context block (markers included, no final newline); '' without items."""
    if not items:
        return ""
    lines = [CONTEXT_BEGIN]
    for item in items:
        lines.append(f"% {comment_field(f'{item.reference}: {item.what}, {item.where}')}")
        lines.append(verbatim_lines(item.text.rstrip("\n")))
    lines.append(CONTEXT_END)
    return "\n".join(lines)


def statement_text(unit: UnitSpec, catalogue: Catalogue) -> str:
    """The document's own text of the unit's statement(s), verbatim."""
    return "\n\n".join(verbatim_lines(catalogue.statements[i].body) for i in unit.statements)


def render_problem(unit: UnitSpec, catalogue: Catalogue, deps: list[Edge], source_prefix: str,
                   mentions: list[Edge] | None = None, context: list[ContextItem] | None = None) -> str:
    """The text of ``units/<unit>/problem.tex``: the provenance block, the context block (when
    the statement cites material from outside it), then the statement verbatim."""
    return header(unit, catalogue, deps, source_prefix, mentions, context) + "\n" + statement_text(unit, catalogue) + "\n"


def header(unit: UnitSpec, catalogue: Catalogue, deps: list[Edge], source_prefix: str,
           mentions: list[Edge] | None = None, context: list[ContextItem] | None = None) -> str:
    """Everything code writes above the statement: the provenance block and the context block."""
    block = provenance_block(unit, catalogue, deps, source_prefix, mentions)
    ctx = context_block(context or [])
    return block + ("\n" + ctx if ctx else "")


def render_files(catalogue: Catalogue, units: list[UnitSpec], edges: list[Edge], source_prefix: str,
                 unit_kinds: list[str], mentions: list[Edge] | None = None
                 ) -> tuple[dict[str, dict[str, bytes]], list[IntakeWarning]]:
    """Per-unit intake files rendered by code: ``problem.tex`` (``render_problem``) and
    ``source_proof.tex`` when the document has a proof; and the ``context`` warnings for cited
    material that could not be carried."""
    files: dict[str, dict[str, bytes]] = {}
    warnings: list[IntakeWarning] = []
    # each edge and mention indexed once by its unit: a per-unit scan of all of them made a
    # whole book quadratic in its statements
    deps_of: dict[str, list[Edge]] = {}
    said_of: dict[str, list[Edge]] = {}
    for e in edges:
        deps_of.setdefault(e.unit, []).append(e)
    for m in mentions or []:
        said_of.setdefault(m.unit, []).append(m)
    for u in units:
        deps = deps_of.get(u.id, [])
        said = said_of.get(u.id, [])
        items, missed = context_items(u, catalogue, unit_kinds, source_prefix)
        warnings += missed
        unit_files = {"problem.tex": render_problem(u, catalogue, deps, source_prefix, said, items).encode()}
        proof = render_source_proof(u, catalogue, source_prefix)
        if proof is not None:
            unit_files["source_proof.tex"] = proof.encode()
        files[u.id] = unit_files
    return files, warnings


def _strip_block(text: str, begin: str, end_marker: str) -> str:
    while True:
        start = text.find(begin)
        if start < 0:
            return text
        end = text.find(end_marker, start)
        end = len(text) if end < 0 else end + len(end_marker)
        text = text[:start] + text[end:].lstrip("\n")


def strip_provenance(text: str) -> str:
    """``text`` without any provenance block (markers and what is between them)."""
    return _strip_block(text, BEGIN, END)


def strip_context(text: str) -> str:
    """``text`` without any context block (markers and what is between them)."""
    return _strip_block(text, CONTEXT_BEGIN, CONTEXT_END)


def with_provenance(statement: str, block: str) -> str:
    """A ``problem.tex`` made of the code-written ``block`` (``header``: provenance and context)
    and ``statement`` (a model's text; any provenance or context block in it, or a stray marker,
    is dropped first)."""
    body = strip_context(strip_provenance(statement)).replace(END, "").replace(CONTEXT_END, "").strip("\n")
    return block + "\n" + body + "\n"


def render_source_proof(unit: UnitSpec, catalogue: Catalogue, source_prefix: str) -> str | None:
    """The document's own proof of the unit (``source_proof.tex``), if it has one."""
    parts = []
    for i in unit.statements:
        proof = catalogue.statements[i].proof
        if proof is not None:
            p = proof.provenance
            parts.append(f"% source: {comment_field(source_prefix + p.describe())}\n{verbatim_lines(proof.body)}")
    return "\n\n".join(parts) + "\n" if parts else None
