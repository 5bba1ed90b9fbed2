"""Drift report: a blueprint's marks against the compiled environment.

Blueprint maintainers check by hand that ``\\lean`` and ``\\leanok`` still match the Lean
(``checkdecls`` needs built ``.olean`` files, and CI can mask its failure). ``drift`` compares
each unit's ``UnitMarks`` with the trusted inspector's evidence (``DeclEvidence`` from
``fyan.adopt.decide``) and lists every disagreement, one ``Drift`` per finding:

* ``leanok-missing`` — ``\\leanok`` but a ``\\lean`` name is not declared (or there is none);
* ``leanok-sorry`` — ``\\leanok`` on the proof but the declaration's closure uses ``sorry``
  or an axiom outside the allow-list;
* ``unknown-name`` — a ``\\lean`` name the environment does not declare;
* ``proved-unmarked`` — every declaration is proved (``DeclEvidence.proved``) but the proof (or
  a definition's statement) has no ``\\leanok``;
* ``uses-missing`` — the Lean of a unit (its statement, or with the package's reference graph
  its proof too) uses another unit's declaration, directly or through declarations no blueprint
  node names (helpers: ``A → h → B``), but the blueprint has no ``\\uses`` from the one to the
  other. The graph is the trusted inspector's (``InspectedLookup.references``: every
  declaration of the adopted package a ``\\lean`` declaration reaches, with what each refers
  to); the walk stops at declarations a node names (their own uses are their node's) and the
  finding gives the path, shortest first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from fyan.adopt.decide import DeclEvidence
from fyan.adopt.marks import UnitMarks

KINDS = ("leanok-missing", "leanok-sorry", "unknown-name", "proved-unmarked", "uses-missing")


class Drift(BaseModel):
    unit: str
    label: str | None
    kind: str
    detail: str


def paths_to_named(start: str, references: Mapping[str, Sequence[str]], named: Mapping[str, str]
                   ) -> dict[str, list[str]]:
    """For each declaration of ``named`` (name -> unit id) that ``start`` reaches in the graph
    ``references`` (name -> the names it refers to directly) through declarations *not* in
    ``named``: the shortest path ``[start, helper..., target]`` (breadth first, references in
    order). Named declarations are not walked through. Pure."""
    parent: dict[str, str | None] = {start: None}
    found: dict[str, list[str]] = {}
    queue = [start]
    at = 0
    while at < len(queue):
        node = queue[at]
        at += 1
        for nxt in references.get(node, ()):
            if nxt in parent:
                continue
            parent[nxt] = node
            if nxt in named:
                path, cur = [], nxt
                while cur is not None:
                    path.append(cur)
                    cur = parent[cur]
                found[nxt] = path[::-1]
            else:
                queue.append(nxt)
    return found


def drift(marks: Mapping[str, UnitMarks], evidence: Mapping[str, DeclEvidence],
          references: Mapping[str, Sequence[str]] | None = None) -> list[Drift]:
    """Every disagreement between ``marks`` (unit id -> marks) and ``evidence`` (``\\lean``
    name -> evidence; a name absent from it counts as not declared), in unit order;
    ``references`` (declaration -> the declarations of the package it refers to directly, from
    the inspector) lets ``uses-missing`` follow proofs and helpers. Pure."""
    out: list[Drift] = []
    owner = {n: uid for uid, m in marks.items() for n in m.lean_names}
    references = references or {}

    def add(m: UnitMarks, kind: str, detail: str) -> None:
        out.append(Drift(unit=m.unit, label=m.label, kind=kind, detail=detail))

    for uid, m in marks.items():
        decls = [evidence.get(n) or DeclEvidence(name=n, found=False) for n in m.lean_names]
        missing = [d.name for d in decls if not d.found]
        for name in missing:
            add(m, "unknown-name", f"\\lean{{{name}}} is not declared in the compiled environment")
        if (m.leanok_statement or m.leanok_proof) and (missing or not m.lean_names):
            add(m, "leanok-missing", "\\leanok, but " + (f"{', '.join(missing)} not declared" if missing
                                                          else "no \\lean name"))
        unproved = [d for d in decls if d.found and not d.proved]
        if m.leanok_proof and unproved:
            add(m, "leanok-sorry", "proof marked \\leanok, but " + "; ".join(
                f"{d.name} uses " + ", ".join((["sorry"] if d.uses_sorry else []) + d.refused_axioms + d.findings)
                for d in unproved))
        proved_mark = m.leanok_proof or (m.leanok_statement and not m.has_proof)
        if decls and all(d.proved for d in decls) and not proved_mark:
            add(m, "proved-unmarked", f"{', '.join(m.lean_names)} proved (sorry-free, axioms allowed) but "
                + ("the proof has no \\leanok" if m.has_proof else "no \\leanok"))
        reported: set[str] = set()
        for d in decls:
            for c in d.constants:
                target = owner.get(c)
                if target and target != uid and target not in m.uses and target not in reported:
                    reported.add(target)
                    add(m, "uses-missing", f"the Lean statement of {d.name} uses {c} ({marks[target].label or target}) "
                        "but the blueprint has no \\uses for it")
        for d in decls:
            if not d.found:
                continue
            for c, path in paths_to_named(d.name, references, owner).items():
                target = owner[c]
                if target == uid or target in m.uses or target in reported:
                    continue
                reported.add(target)
                via = path[1:-1]
                add(m, "uses-missing", f"{' → '.join(path)}: the Lean of {d.name} uses {c} "
                    f"({marks[target].label or target})" + (f" through {', '.join(via)}, which no blueprint node "
                                                             "names," if via else "")
                    + " but the blueprint has no \\uses for it")
    return out


def counts(found: list[Drift]) -> dict[str, int]:
    """Kind -> number of findings (every kind of ``KINDS``, zeros included)."""
    return {k: sum(d.kind == k for d in found) for k in KINDS}
