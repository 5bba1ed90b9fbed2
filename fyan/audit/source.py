"""The source side of an audit: the formula tree a model extracts from ``problem.tex``.

The extraction (``SourceExtraction``, prompt ``audit_source``) is checked by code before
anything else uses it (``extraction_errors``): every binder, atom and definition use quotes
``problem.tex`` literally (whitespace-insensitive); definition uses name a declared term by an
identifier; terms quote the text. Then an independent second call (``audit_source_check``),
which sees only ``problem.tex`` and the extracted tree — never the Lean statement — must judge
the tree faithful (``check_errors`` validates its reply's form).
"""

from __future__ import annotations

import re

from fyan.audit.formula import BINDER_OPS, Node
from fyan.audit.record import SourceCheck, SourceExtraction

_NAME = re.compile(r"^[^\W\d][\w'₀-₉]*$")


def _norm(text: str) -> str:
    return " ".join(text.split())


def quoted(quote: str | None, problem: str) -> bool:
    """Whether ``quote`` occurs literally in ``problem`` (whitespace-insensitive)."""
    q = _norm(quote or "")
    return bool(q) and q in _norm(problem)


def extraction_errors(ex: SourceExtraction, problem: str) -> list[str]:
    """Form errors of an extraction against the statement text ``problem`` (empty: usable)."""
    errors: list[str] = []
    terms = {t.name for t in ex.terms}
    for t in ex.terms:
        if not _NAME.match(t.name):
            errors.append(f"term {t.name!r}: a term's name must be one identifier (e.g. divides, even)")
        if not quoted(t.quote, problem):
            errors.append(f"term {t.name!r}: quote not found in the statement: {t.quote!r}")
    for k, n in enumerate(ex.statement.walk(), start=1):
        what = f"node {k} ({n.op}{' ' + (n.text or n.var or '') if (n.text or n.var) else ''})"
        if n.op in BINDER_OPS or n.op in ("atom", "def"):
            if not n.quote:
                errors.append(f"{what}: needs `quote`, a literal quotation of the statement")
            elif not quoted(n.quote, problem):
                errors.append(f"{what}: quote not found in the statement: {n.quote!r}")
        if n.op == "def":
            if not _NAME.match(n.name or ""):
                errors.append(f"{what}: `name` must be one identifier naming a term, got {n.name!r}")
            elif n.name not in terms:
                errors.append(f"{what}: uses term {n.name!r}, which is not declared in `terms`")
        if n.op in BINDER_OPS and not (n.domain and n.domain.strip()):
            errors.append(f"{what}: give the binder's domain (`_` only if the statement gives none)")
    return errors


def check_errors(reply: SourceCheck, tree: Node) -> list[str]:
    """Form errors of the second call's verdict."""
    errors = []
    ids = {n.id for n in tree.walk()} | {"missing"}
    if reply.verdict == "unfaithful" and not reply.objections:
        errors.append("an 'unfaithful' verdict must list its objections")
    for o in reply.objections:
        if o.node not in ids:
            errors.append(f"objection names node {o.node!r}, which is not a node id of the tree (or 'missing')")
        if len(_norm(o.problem)) < 12:
            errors.append(f"objection on {o.node}: state the problem concretely")
    return errors
