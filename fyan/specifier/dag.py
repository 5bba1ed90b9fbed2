"""The document-level dependency DAG between theorem units (networkx).

Edges come from (``Edge.origin``):

* ``ref``  — ``\\ref``/``\\cref``/... inside a statement or its proof to a label owned by
  another unit's statement (labels on items or equations inside a statement count);
* ``uses`` — blueprint ``\\uses{...}`` (statement-level or proof-level, ``in_proof``);
* ``nested`` — a statement (a claim) nested inside another unit's proof: the outer unit
  depends on it (references from a nested statement to the labels of the statement that
  encloses it give no edge: they would close a cycle);
* ``term`` — a statement (not its proof) mentions a term an earlier definition unit defines:
  a bold/emphasised term of the definition, or the definition's title ("Entropy",
  ``$\\tau$-minimizer``), unless the definition is already reachable from the statement
  through ``ref``/``uses``/``nested`` edges (an implied dependency is not a new one). Toggle:
  ``[intake] term_edges``. Measured with ``scripts/dag_quality.py`` against the blueprints'
  ``\\uses``: edge F1 0.836 → 0.845 on PFR, 0.121 → 0.165 on Ramanujan–Nagell, 0.78 → 0.75 on
  Dirichlet (one extra edge); see the README;
* ``proposed`` — added by the model part of the Specifier, validated like the others.

``validate`` checks what DESIGN.md §1.2 asks of the Specifier: every unit-kind statement is in
exactly one unit, every edge target exists, there is no cycle (the cycle is reported with
provenance), and layers are recomputed from the edges (layer 0 = no dependencies).
Errors raise ``DagError``; a reference to a label defined nowhere raises it too unless
``unknown_references = "warn"``.
"""

from __future__ import annotations

import re
from typing import Literal

import networkx as nx
from pydantic import BaseModel, Field

from fyan.errors import DagError
from fyan.intake.catalogue import Catalogue, Statement
from fyan.specifier.units import UnitSpec

EdgeOrigin = Literal["ref", "uses", "nested", "term", "proposed"]


class Edge(BaseModel):
    """``unit`` depends on ``depends_on``."""

    unit: str
    depends_on: str
    origin: EdgeOrigin
    in_proof: bool = False
    evidence: str = Field(description="Where the edge comes from, e.g. 'Taste.tex:53 \\ref{x}'.")


class Dag(BaseModel):
    """Validated units and edges with their layers."""

    units: list[UnitSpec]
    edges: list[Edge]
    layers: dict[str, int]
    notes: list[str] = Field(default_factory=list)

    def graph(self) -> nx.DiGraph:
        return build_graph(self.units, self.edges)

    @property
    def layer_count(self) -> int:
        return 1 + max(self.layers.values(), default=-1)


def build_graph(units: list[UnitSpec], edges: list[Edge]) -> nx.DiGraph:
    g = nx.DiGraph()
    for u in units:
        g.add_node(u.id)
    for e in edges:
        g.add_edge(e.unit, e.depends_on)
    return g


def _statement_units(units: list[UnitSpec]) -> dict[int, str]:
    return {i: u.id for u in units for i in u.statements}


def _ancestors(catalogue: Catalogue, index: int) -> set[int]:
    found: set[int] = set()
    parent = catalogue.statements[index].parent
    while parent is not None and parent not in found:
        found.add(parent)
        parent = catalogue.statements[parent].parent
    return found


def extract_edges(
    catalogue: Catalogue,
    units: list[UnitSpec],
    *,
    unknown_references: Literal["error", "warn"] = "error",
    term_edges: bool = True,
) -> tuple[list[Edge], list[str]]:
    """Deterministic edges of ``units`` from references, ``\\uses``, nesting and defined terms.

    Returns ``(edges, notes)``; ``notes`` explains references that give no edge (to a
    statement that is not a unit, or, in ``warn`` mode, to an unknown label). Raises
    ``DagError`` listing every unknown label with file and line in ``error`` mode.
    """
    owner = _statement_units(units)
    edges: dict[tuple[str, str, str], Edge] = {}
    notes: list[str] = []
    unknown: list[str] = []

    def add(unit: str, target: str, origin: EdgeOrigin, in_proof: bool, evidence: str) -> None:
        key = (unit, target, origin)
        if key not in edges:
            edges[key] = Edge(unit=unit, depends_on=target, origin=origin, in_proof=in_proof, evidence=evidence)
        elif not in_proof:
            edges[key].in_proof = False

    for unit in units:
        for index in unit.statements:
            stmt = catalogue.statements[index]
            ancestors = _ancestors(catalogue, index) if stmt.parent is not None else set()
            for ref in stmt.references:
                site = catalogue.labels.get(ref.label)
                where = ref.where
                if site is None:
                    unknown.append(f"{where}: {ref.shown} in {unit.id}: unknown label")
                    continue
                if site.statement_index is None:
                    continue  # a section, figure or equation label outside any statement
                if site.statement_index in ancestors:
                    continue  # a claim citing the statement whose proof it sits in
                target = owner.get(site.statement_index)
                if target is None:
                    other = catalogue.statements[site.statement_index]
                    notes.append(
                        f"{where}: {unit.id} refers to {other.display} ({other.kind}, not a unit kind); no edge"
                    )
                    continue
                if target == unit.id:
                    continue
                origin: EdgeOrigin = "uses" if ref.macro == "uses" else "ref"
                add(unit.id, target, origin, ref.in_proof, f"{where} {ref.shown}")
            if stmt.parent is not None:
                outer = owner.get(stmt.parent)
                if outer is not None and outer != unit.id:
                    p = stmt.provenance
                    add(outer, unit.id, "nested", stmt.in_parent_proof, f"{p} {stmt.display} is stated inside it")
    if unknown:
        if unknown_references == "error":
            shown = "\n  ".join(unknown[:20])
            more = f"\n  ... and {len(unknown) - 20} more" if len(unknown) > 20 else ""
            raise DagError(
                f"{len(unknown)} reference(s) to labels defined nowhere in the document:\n  {shown}{more}",
                hint="fix the labels, include the files that define them, or set "
                '[intake] unknown_references = "warn" in fyan.toml (`fyan init --unknown-references warn`)',
            )
        notes.extend(f"{u} (ignored)" for u in unknown)
    if term_edges:
        _term_edges(catalogue, units, edges)
    return list(edges.values()), notes


def definition_keys(stmt: Statement) -> list[tuple[str, re.Pattern[str]]]:
    """What a definition defines, as (shown key, pattern to find it in a later statement):
    its bold/emphasised terms, and its title (words, or the TeX of a title with math)."""
    keys: list[tuple[str, re.Pattern[str]]] = []
    for term in stmt.defined_terms:
        keys.append((f'term "{term}"', _word_pattern(term)))
    title = " ".join((stmt.title or "").split())
    if title and "$" in title:
        compact = re.sub(r"\s+", "", title)
        if len(compact) >= 3:
            keys.append((f'title "{title}"', re.compile(re.escape(compact))))
    elif len(title) >= 4 and title.lower() not in {t.lower() for t in stmt.defined_terms}:
        keys.append((f'title "{title}"', _word_pattern(title.lower())))
    return keys


def _word_pattern(term: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z\\])" + re.escape(term) + r"(?:s|es)?(?![A-Za-z])", re.IGNORECASE)


_META = re.compile(r"\\(?:label|uses|lean|ref|cref|Cref|eqref|autoref)\*?\s*\{[^{}]*\}|(?<!\\)%[^\n]*")


def _term_edges(catalogue: Catalogue, units: list[UnitSpec], edges: dict) -> None:
    definitions = []
    for u in units:
        if u.kind == "definition":
            keys = definition_keys(catalogue.statements[u.statements[0]])
            if keys:
                definitions.append((u, keys))
    if not definitions:
        return
    graph = nx.DiGraph()
    graph.add_edges_from((a, b) for (a, b, _) in edges)
    reach: dict[str, set[str]] = {}
    linked = {(a, b) for (a, b, _) in edges}
    for unit in units:
        stmt = catalogue.statements[unit.statements[0]]
        text = stmt.body
        plain = _META.sub(" ", text)
        lowered = plain.lower()
        compact: str | None = None
        for d, keys in definitions:
            if d.order >= unit.order or (unit.id, d.id) in linked:
                continue
            for shown, pattern in keys:
                if shown.startswith("title") and "$" in shown:
                    if compact is None:
                        compact = re.sub(r"\s+", "", plain)
                    found = pattern.search(compact) is not None
                    m = None
                else:
                    needle = shown.split('"', 1)[1][:-1].lower()
                    m = pattern.search(plain) if needle in lowered else None  # cheap test first
                    found = m is not None
                if not found:
                    continue
                if unit.id not in reach:
                    reach[unit.id] = nx.descendants(graph, unit.id) if unit.id in graph else set()
                if d.id in reach[unit.id]:
                    break  # already implied by other edges
                line = stmt.provenance.line_start + (plain.count("\n", 0, m.start()) if m else 0)
                edges[(unit.id, d.id, "term")] = Edge(
                    unit=unit.id,
                    depends_on=d.id,
                    origin="term",
                    in_proof=False,
                    evidence=(f"{stmt.provenance.file}:{line} {shown}" if stmt.provenance.page_start is None
                              else f"{stmt.provenance} {shown}"),
                )
                linked.add((unit.id, d.id))
                break


def validate(catalogue: Catalogue, units: list[UnitSpec], edges: list[Edge], unit_kinds: list[str]) -> Dag:
    """Check units and edges (module docstring) and compute layers. Raises ``DagError``."""
    ids = [u.id for u in units]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise DagError(f"unit id(s) used twice: {dup}")
    seen: dict[int, str] = {}
    for u in units:
        for i in u.statements:
            if not 0 <= i < len(catalogue.statements):
                raise DagError(f"unit {u.id} names statement #{i}, which does not exist")
            if i in seen:
                s = catalogue.statements[i]
                raise DagError(f"{s.provenance}: {s.display} is in two units: {seen[i]} and {u.id}")
            seen[i] = u.id
    kinds = set(unit_kinds)
    for s in catalogue.statements:
        if s.kind in kinds and s.index not in seen:
            raise DagError(f"{s.provenance}: {s.display} ({s.kind}) is in no unit")
    known = set(ids)
    for e in edges:
        for end in (e.unit, e.depends_on):
            if end not in known:
                raise DagError(f"edge {e.unit} -> {e.depends_on} ({e.evidence}): unknown unit {end!r}")
        if e.unit == e.depends_on:
            raise DagError(f"{e.evidence}: unit {e.unit} depends on itself")
    g = build_graph(units, edges)
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        cycle = None
    if cycle:
        by_id = {u.id: u for u in units}
        evidence = {(e.unit, e.depends_on): e.evidence for e in edges}
        steps = [f"{a} ({by_id[a].provenance}) depends on {b}: {evidence[(a, b)]}" for a, b in cycle]
        raise DagError(
            "dependency cycle:\n  " + "\n  ".join(steps),
            hint="remove one of these references, or split a statement",
        )
    return Dag(units=units, edges=edges, layers=compute_layers(g))


def compute_layers(g: nx.DiGraph) -> dict[str, int]:
    """Layer of each node: 0 without dependencies, else 1 + the deepest dependency's layer."""
    layers: dict[str, int] = {}
    for node in reversed(list(nx.topological_sort(g))):
        layers[node] = 1 + max((layers[d] for d in g.successors(node)), default=-1)
    return layers
