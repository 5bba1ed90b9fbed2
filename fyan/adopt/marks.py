"""Blueprint marks per theorem unit: what a leanblueprint source *claims* about its Lean.

A leanblueprint statement may carry ``\\lean{A, B}`` (the declarations that formalize it),
``\\leanok`` in the statement (its Lean statement exists) and in its proof (the proof is
complete), ``\\mathlibok`` (it is in Mathlib) and ``\\uses{label, ...}`` (statement- or
proof-level dependencies). Intake (``fyan.intake.tex``) records them on each ``Statement``;
``unit_marks`` gathers them per theorem unit (a unit may hold several statements: its
first statement's ``\\leanok`` counts, its statements' ``\\lean`` names are all its own).

These are claims, never evidence: adoption decides from the compiled environment
(``fyan.adopt.decide``), and the drift report (``fyan.adopt.drift``) compares the two.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from fyan.intake.catalogue import Catalogue
from fyan.state.models import UnitRecord


class UnitMarks(BaseModel):
    """The blueprint marks of one theorem unit."""

    unit: str
    label: str | None = None
    lean_names: list[str] = Field(default_factory=list, description="\\lean{...} names, in order, without repeats")
    leanok_statement: bool = False
    leanok_proof: bool = False
    mathlibok: bool = False
    has_proof: bool = False
    uses: dict[str, bool] = Field(default_factory=dict,
                                  description="unit id named by \\uses -> True when only in the proof")


def unit_marks(units: Iterable[UnitRecord], catalogue: Catalogue) -> dict[str, UnitMarks]:
    """Unit id -> its ``UnitMarks``, from the intake ``catalogue`` the units were made from.

    ``\\uses`` labels are resolved through the catalogue's labels to the unit holding the
    labelled statement; a label of no unit (a section, an equation) is ignored."""
    units = list(units)
    owner = {i: u.id for u in units for i in u.statements}
    out: dict[str, UnitMarks] = {}
    for u in units:
        stmts = [catalogue.statements[i] for i in u.statements]
        first = stmts[0]
        names = list(dict.fromkeys(n for s in stmts for n in s.lean_names))
        uses: dict[str, bool] = {}
        for s in stmts:
            for r in s.references:
                if r.macro != "uses":
                    continue
                site = catalogue.labels.get(r.label)
                target = owner.get(site.statement_index) if site and site.statement_index is not None else None
                if target is None or target == u.id:
                    continue
                uses[target] = uses.get(target, True) and r.in_proof
        out[u.id] = UnitMarks(
            unit=u.id, label=u.label, lean_names=names, leanok_statement=first.leanok,
            leanok_proof=bool(first.proof and first.proof.leanok), mathlibok=first.mathlibok,
            has_proof=first.proof is not None, uses=uses,
        )
    return out
