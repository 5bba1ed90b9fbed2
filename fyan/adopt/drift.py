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

Where the package uses LeanArchitect, the trusted inspector also reports the ``@[blueprint]``
attributes as the compiled environment stores them (``BlueprintPresent``: each declaration's
label and the labels its statement and proof use, read from ``Architect.blueprintExt``), and
``blueprint_drift`` compares them with the nodes intake read from the generated files (text a
build wrote, possibly stale or edited). The compiled environment wins; each finding names what
it says:

* ``blueprint-label`` — a ``\\lean`` name sits in a node whose label differs from the label its
  compiled ``@[blueprint]`` has;
* ``blueprint-uses`` — the labels a node ``\\uses`` differ from those its declarations' compiled
  attributes use (statement and proof together, the node's own label left out);
* ``blueprint-unlisted`` — a declaration of the package has ``@[blueprint]`` but no node names it;
* ``blueprint-unread`` — the environment's LeanArchitect declares ``Node`` with another layout
  than the inspector reads: nothing was compared.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from pydantic import BaseModel

from fyan.adopt.decide import DeclEvidence
from fyan.adopt.marks import UnitMarks
from fyan.lean.inspector import BlueprintAbsent, BlueprintPresent

BLUEPRINT_KINDS = ("blueprint-label", "blueprint-uses", "blueprint-unlisted", "blueprint-unread")
KINDS = ("leanok-missing", "leanok-sorry", "unknown-name", "proved-unmarked", "uses-missing", *BLUEPRINT_KINDS)

#: how to bring the generated files back to what the compiled environment says
REGENERATE = "the compiled environment wins: run `lake build :blueprint` in the package and ingest again"


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


def blueprint_drift(marks: Mapping[str, UnitMarks], blueprint: BlueprintAbsent | BlueprintPresent | None,
                    modules: Collection[str] | None = None) -> list[Drift]:
    """Every disagreement between ``marks`` (unit id -> marks, read from the generated files) and
    the compiled ``@[blueprint]`` attributes the inspector reported (``blueprint``; None or
    absent: the package has no LeanArchitect, nothing to compare), limited to the entries of
    ``modules`` (the package's inspected modules; None: every entry). Kinds in the module
    docstring; in unit order, then the unlisted declarations in report order. Pure."""
    if not isinstance(blueprint, BlueprintPresent):
        return []
    if blueprint.layout_problem is not None:
        return [Drift(unit="", label=None, kind="blueprint-unread",
                      detail=f"the package's LeanArchitect stores @[blueprint] in a layout the inspector does not read "
                      f"({blueprint.layout_problem}); labels and \\uses were not compared with the compiled environment")]
    entries = [e for e in blueprint.entries if modules is None or e.module in modules]
    owner = {n: uid for uid, m in marks.items() for n in m.lean_names}
    by_unit: dict[str, list] = {}
    for e in entries:
        if e.name in owner:
            by_unit.setdefault(owner[e.name], []).append(e)
    out: list[Drift] = []
    for uid, m in marks.items():
        mine = by_unit.get(uid)
        if not mine:
            continue
        for e in mine:
            if e.label != m.label:
                out.append(Drift(unit=uid, label=m.label, kind="blueprint-label",
                                 detail=f"\\lean{{{e.name}}} is in the node labelled {m.label!r}, but its compiled "
                                 f"@[blueprint] has the label {e.label!r} ({REGENERATE})"))
        own = {e.label for e in mine} | ({m.label} if m.label else set())
        compiled = set().union(*(e.uses for e in mine)) - own
        written = {marks[t].label or t for t in m.uses if t in marks} - own
        if compiled != written:
            parts = []
            if compiled - written:
                parts.append("the compiled attributes use " + ", ".join(sorted(compiled - written))
                             + " but the node has no \\uses for it")
            if written - compiled:
                parts.append("the node \\uses " + ", ".join(sorted(written - compiled))
                             + " but no compiled attribute of " + ", ".join(e.name for e in mine) + " does")
            out.append(Drift(unit=uid, label=m.label, kind="blueprint-uses", detail="; ".join(parts) + f" ({REGENERATE})"))
    for e in entries:
        if e.name not in owner:
            out.append(Drift(unit="", label=e.label, kind="blueprint-unlisted",
                             detail=f"{e.name} ({e.module}) has @[blueprint {e.label!r}] in the compiled environment, "
                             f"but no node of the blueprint names it ({REGENERATE})"))
    return out


def counts(found: list[Drift]) -> dict[str, int]:
    """Kind -> number of findings (every kind of ``KINDS``, zeros included)."""
    return {k: sum(d.kind == k for d in found) for k in KINDS}
