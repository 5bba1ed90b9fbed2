"""``problem.tex``: a unit's statement with a provenance block written by code.

The provenance block is a run of TeX comment lines between fixed markers; models never write
it (DESIGN.md §1, §2): ``render_problem`` writes it at ingest, and ``with_provenance`` puts the
code-written block back on a statement text a model rewrote (any block the model wrote is
dropped). The statement text below it is the verbatim environment from the source (for a PDF,
the text of the statement as extracted from the text layer). Its grammar, checked by
``fyan.specifier.lints``::

    % --- fyan provenance (written by Fyan from the source; do not edit) ---
    % unit: <unit id>
    % kind: <kind>
    % source: <file>, lines <a>-<b>          (TeX, Markdown)
    % source: <file>, page <p>, characters <a>-<b>                      (PDF)
    % source: <file>, pages <p>-<q>, characters <a> (page <p>) to <b> (page <q>)
    % label: ... / % title: ... / % lean (from the source): ... / % text: ...   (optional)
    % depends on: nothing | <unit> (<origin>, statement|proof; <evidence>)   (one per edge)
    % --- end provenance ---
"""

from __future__ import annotations

from fyan.intake.catalogue import Catalogue
from fyan.specifier.dag import Edge
from fyan.specifier.units import UnitSpec

BEGIN = "% --- fyan provenance (written by Fyan from the source; do not edit) ---"
END = "% --- end provenance ---"


PDF_NOTE = "% text: from the PDF's text layer (formulas may be flattened: check the PDF)"


def provenance_block(unit: UnitSpec, catalogue: Catalogue, deps: list[Edge], source_prefix: str) -> str:
    """The code-written provenance block of ``unit`` (markers included, no final newline).

    ``source_prefix`` is prepended to catalogue paths so the block names files relative to
    the project folder (for example ``source/``).
    """
    lines = [BEGIN, f"% unit: {unit.id}", f"% kind: {unit.kind}"]
    for i in unit.statements:
        s = catalogue.statements[i]
        p = s.provenance
        lines.append(f"% source: {source_prefix}{p.describe()}")
        if p.page_start is not None:
            lines.append(PDF_NOTE)
        if s.label:
            lines.append(f"% label: {s.label}")
        if s.title:
            lines.append(f"% title: {' '.join(s.title.split())}")
        if s.lean_names:
            lines.append(f"% lean (from the source): {', '.join(s.lean_names)}")
    if deps:
        for e in sorted(deps, key=lambda e: (e.depends_on, e.origin)):
            scope = "proof" if e.in_proof else "statement"
            lines.append(f"% depends on: {e.depends_on} ({e.origin}, {scope}; {e.evidence})")
    else:
        lines.append("% depends on: nothing")
    lines.append(END)
    return "\n".join(lines)


def statement_text(unit: UnitSpec, catalogue: Catalogue) -> str:
    """The document's own text of the unit's statement(s), verbatim."""
    return "\n\n".join(catalogue.statements[i].body for i in unit.statements)


def render_problem(unit: UnitSpec, catalogue: Catalogue, deps: list[Edge], source_prefix: str) -> str:
    """The text of ``units/<unit>/problem.tex``: the provenance block, then the statement."""
    return provenance_block(unit, catalogue, deps, source_prefix) + "\n" + statement_text(unit, catalogue) + "\n"


def strip_provenance(text: str) -> str:
    """``text`` without any provenance block (markers and what is between them)."""
    while True:
        start = text.find(BEGIN)
        if start < 0:
            return text
        end = text.find(END, start)
        end = len(text) if end < 0 else end + len(END)
        text = text[:start] + text[end:].lstrip("\n")


def with_provenance(statement: str, block: str) -> str:
    """A ``problem.tex`` made of the code-written ``block`` and ``statement`` (a model's text;
    any provenance block in it, or a stray marker, is dropped first)."""
    body = strip_provenance(statement).replace(END, "").strip("\n")
    return block + "\n" + body + "\n"


def render_source_proof(unit: UnitSpec, catalogue: Catalogue, source_prefix: str) -> str | None:
    """The document's own proof of the unit (``source_proof.tex``), if it has one."""
    parts = []
    for i in unit.statements:
        proof = catalogue.statements[i].proof
        if proof is not None:
            p = proof.provenance
            parts.append(f"% source: {source_prefix}{p.describe()}\n{proof.body}")
    return "\n\n".join(parts) + "\n" if parts else None
