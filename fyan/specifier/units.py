"""Theorem units: one per statement of a unit kind, with safe ids and Lean module names.

A unit id is derived from the statement's label (``thm:n even implies n^2 even`` →
``thm-n-even-implies-n-2-even``; non-ASCII letters transliterated, ``thm:été`` → ``thm-ete``) or, without a label, from its kind and ordinal
(``theorem-7``: the seventh theorem of the document). Ids use only ``[a-z0-9-]`` so they are
safe folder names; each id maps to a Lean module component in CamelCase
(``ThmNEvenImpliesN2Even``). Collisions get ``-2``, ``-3``, ... in document order, so ids are
stable as long as the document is.
"""

from __future__ import annotations

import re
from collections import Counter

from anyascii import anyascii
from pydantic import BaseModel, Field

from fyan.intake.catalogue import Catalogue, Provenance, Statement
from fyan.intake.texscan import paused_gc

_LEAN_KEYWORDS = {"Type", "Prop", "Sort", "fun", "let", "have", "show", "from", "at", "by", "do", "then"}


class UnitSpec(BaseModel):
    """A theorem unit as the Specifier defines it (before any stage has run)."""

    id: str
    kind: str
    label: str | None = None
    title: str | None = None
    statements: list[int] = Field(description="Catalogue indices of the statements in this unit.")
    module: str = Field(description="Lean module component, e.g. ThmNEvenImpliesN2Even.")
    provenance: Provenance
    order: int = Field(description="Document order of the unit's first statement.")


def sanitize_id(text: str) -> str:
    """Lowercase ``[a-z0-9-]`` form of ``text``: letters outside ASCII transliterated
    (``thm:été`` → ``thm-ete``, ``Erdős`` → ``erdos``, with the ``anyascii`` library), runs of
    other characters one ``-``."""
    text = anyascii(text).lower()
    text = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    return text or "unit"


def module_name(unit_id: str) -> str:
    """Lean module component for a unit id: CamelCase, starting with a letter."""
    parts = [p for p in unit_id.split("-") if p]
    name = "".join(p[:1].upper() + p[1:] for p in parts)
    if not name or not name[0].isalpha():
        name = "U" + name
    if name in _LEAN_KEYWORDS:
        name += "Unit"
    return name


def build_units(catalogue: Catalogue, unit_kinds: list[str]) -> list[UnitSpec]:
    """One ``UnitSpec`` per catalogue statement whose kind is in ``unit_kinds``.

    Deterministic: the same catalogue always gives the same ids in the same order.
    """
    with paused_gc():
        return _build_units(catalogue, unit_kinds)


def _build_units(catalogue: Catalogue, unit_kinds: list[str]) -> list[UnitSpec]:
    kinds = set(unit_kinds)
    ordinal: Counter[str] = Counter()
    taken: set[str] = set()
    taken_modules: set[str] = set()
    units: list[UnitSpec] = []
    for stmt in catalogue.statements:
        ordinal[stmt.kind] += 1
        if stmt.kind not in kinds:
            continue
        base = sanitize_id(stmt.label) if stmt.label else f"{stmt.kind}-{ordinal[stmt.kind]}"
        uid, n = base, 1
        while uid in taken or module_name(uid) in taken_modules:
            n += 1
            uid = f"{base}-{n}"
        taken.add(uid)
        taken_modules.add(module_name(uid))
        units.append(_unit(uid, stmt))
    return units


def _unit(uid: str, stmt: Statement) -> UnitSpec:
    return UnitSpec(
        id=uid,
        kind=stmt.kind,
        label=stmt.label,
        title=stmt.title,
        statements=[stmt.index],
        module=module_name(uid),
        provenance=stmt.provenance,
        order=stmt.index,
    )
