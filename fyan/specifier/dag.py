"""The document-level dependency DAG between theorem units (networkx).

Every edge says why it exists (``Edge.origin``, the kind of evidence) and whether it is a
**dependency** (the unit needs the other one proved first) or only a **mention** (it cites it;
kept and listed, but it orders nothing). Kinds of evidence, strongest first (``STRENGTH``):

* ``uses`` — blueprint ``\\uses{...}`` on the statement, then on the proof (``in_proof``);
* ``nested`` — a statement (a claim) nested inside another unit's proof or statement: the outer
  unit depends on it (a nested statement citing the statement that encloses it gives nothing);
* ``ref`` — a reference (``\\ref``, ``\\cref``, ``\\hyperref[...]``, a document's own reference
  macro, a printed "Lemma 2.1" in a PDF) in the statement, then in the proof, to a label owned by
  another unit's statement (labels on its items count);
* ``proposed`` — proposed by the model part of the Specifier (checked like the others);
* ``display`` — a reference (usually ``\\eqref``) to a displayed formula inside another unit's
  *statement*;
* ``closing`` — a reference in the closing sentence of a proof ("This proves Lemma 2, hence
  Theorem 1.");
* ``title`` and ``term`` — a statement (not its proof) uses the title or a defined term of an
  earlier definition. Only in documents without ``\\uses`` (``[intake] term_edges``). Terms come
  from definition markup only (``Statement.defined_terms``: one marked-up word counts only in a
  defining phrase, function words never); keys match on word and number boundaries ("Equation 1"
  is not in "Equation 14"), accents and TeX escapes folded alike on both sides, a name such as
  ``Sets`` only with its case; one generic word (``GENERIC_WORDS``: "lattice", "periodic",
  "order") is a key only for the definition it titles; a title that is a formula
  (``Definition ($\\eta$)``) is notation, not a title key. No edge when the key is the document's
  own vocabulary (found in most later statements, ``PERVASIVE_SHARE``), when the definition is
  implied (reachable from the statement or from another definition it uses), from a definition
  that defines the same key again, or from a definition whose own name contains the key ("The
  periodic sphere packing constant is defined …" does not use "sphere packing constant",
  ``_OWN``); a key several definitions define goes to the latest one before the statement;
* ``notation`` — a statement (not its proof) uses a symbol an earlier definition introduces
  (``fyan.specifier.notation``: ``X := …``, "we write $X$ for", "denote by $X$", a defining cue
  before ``X = …``, a document macro in such a place; ``[intake] notation_edges``, documents
  without ``\\uses`` only). Symbols are matched token by token after the same normalisation on
  both sides; bare letters, numbers, standard operators and sets give no edge unless the
  definition owns a macro for them or names the symbol in its title; among the symbols a use
  matches, the best match wins, then the definition in force. Same strength, mention and cycle
  rules as ``term``; a symbol found in most later statements gives no edge.

The rule, applied in this order:

1. **``\\uses`` are authoritative.** In a statement (or proof) that has ``\\uses``, its other
   references are mentions ("not in its \\uses"); references where there is no ``\\uses`` stay
   evidence. A document with ``\\uses`` gets no term or title edges.
2. A reference to a display inside another unit's **proof** is a mention. (A closing-sentence
   reference to a **later** statement is a dependency like any closing reference: demoting it
   raised F1 on no corpus blueprint, ``DEMOTE_LATER_CLOSING``.)
3. Dependencies from ``uses``, ``nested``, ``ref`` and ``proposed`` evidence form the graph.
   With ``cycles = "break"`` (the default) the weakest edge of each cycle (lowest strength:
   ``\\uses`` > a reference in a proof > a reference in a statement; a forward reference before a
   backward one) becomes a mention with a note and a warning naming it; a cycle that ``\\uses``
   edges alone form still raises ``DagError``. With ``cycles = "error"`` (``fyan init --strict``)
   every cycle is reported in one run, each edge with its file, line and evidence (``DagError``).
4. ``display``, ``closing``, ``title``, ``term`` and ``notation`` evidence is added strongest
   first; an edge that would close a cycle is kept as a mention instead, with the cycle in its
   note.
5. A ``title``, ``term`` or ``notation`` edge the graph already implies is redundant for
   scheduling and kept as a mention naming the path (``_drop_implied``): implied through a chain
   of stronger dependencies, or through a unit the *statement itself* cites by stronger evidence.
   A proof's dependency followed by weak evidence does not make a statement's own use of a
   definition redundant.

``validate`` checks what docs/design.md asks of the Specifier: every unit-kind statement is in
exactly one unit, every edge target exists, there is no cycle (all of them reported), and
layers are recomputed from the edges (layer 0 = no dependencies). Errors raise ``DagError``; a
reference to a label defined nowhere raises it too with ``unknown_references = "error"`` (with
``"warn"``, the default of ``fyan.toml``, it is a warning and a finding of its unit, ``UnitFlag``).
Messages name files relative to the document's main folder (never a project path that a
failed ``fyan init`` did not create).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import networkx as nx
from pydantic import BaseModel, Field

from fyan.errors import DagError
from fyan.intake.catalogue import Catalogue, IntakeWarning, Reference, Statement
from fyan.intake.texscan import fold_case_kept, paused_gc
from fyan.specifier.notation import Macros, Notation, definition_notation, score, statement_uses
from fyan.specifier.units import UnitSpec

EdgeOrigin = Literal["uses", "nested", "ref", "proposed", "display", "closing", "title", "term", "notation"]

#: Strength of each kind of evidence (statement scope, proof scope): a cycle is broken at its
#: weakest edge. Source: the rule in the module docstring; the order of trust of
#: ``\\uses`` > a reference in a proof (the author used it to prove) > a reference in a
#: statement (often a pointer: "as in Lemma 3") > a mention.
STRENGTH: dict[str, tuple[int, int]] = {
    "uses": (10, 9), "nested": (8, 8), "ref": (6, 7), "proposed": (5, 5), "display": (4, 4), "closing": (3, 3),
    "title": (2, 2), "term": (1, 1), "notation": (1, 1),
}
#: The former rule "a reference in a proof's closing sentence to a *later* statement is a
#: mention" ("..., which we prove in Lemma 5.3"), off: measured on the corpus blueprints'
#: ``\\uses`` with ``scripts/dag_quality.py --closing``, it raises F1 on none of them
#: (equal on eight, FLT 0.426 with it against 0.432 without: its one such pair is in ``\\uses``),
#: and in one large blueprint 13 of 14 such mentions were real dependencies.
DEMOTE_LATER_CLOSING = False
#: Evidence that is added only where it closes no cycle (rule 4).
WEAK_ORIGINS = frozenset({"display", "closing", "title", "term", "notation"})


class Edge(BaseModel):
    """``unit`` depends on ``depends_on`` (or, with ``dependency`` False, only mentions it)."""

    unit: str
    depends_on: str
    origin: EdgeOrigin
    in_proof: bool = False
    evidence: str = Field(description="Where the edge comes from, e.g. 'Taste.tex:53 \\ref{x}'.")
    dependency: bool = Field(default=True, description="False: a mention, which orders nothing.")
    note: str | None = Field(default=None, description="Why a mention is not a dependency.")

    @property
    def strength(self) -> int:
        """Strength of the evidence (``STRENGTH``); higher is stronger."""
        return STRENGTH[self.origin][1 if self.in_proof else 0]


class Dag(BaseModel):
    """Validated units and dependency edges with their layers; ``mentions`` are the references
    kept as mentions (not part of the graph)."""

    units: list[UnitSpec]
    edges: list[Edge]
    layers: dict[str, int]
    notes: list[str] = Field(default_factory=list)
    mentions: list[Edge] = Field(default_factory=list)

    def graph(self) -> nx.DiGraph:
        return build_graph(self.units, self.edges)

    @property
    def layer_count(self) -> int:
        return 1 + max(self.layers.values(), default=-1)


class UnitFlag(BaseModel):
    """Something about one unit's references that its findings must show: ``rule``
    ``unknown-reference`` (a reference to a label defined nowhere), ``incomplete-dependencies``
    (a ``\\uses`` of such a label: the unit's declared dependencies are incomplete) or
    ``duplicate-label`` (a reference to a label defined twice, resolved to the last)."""

    unit: str
    rule: Literal["unknown-reference", "incomplete-dependencies", "duplicate-label"]
    message: str


class ReferenceCounts(BaseModel):
    """The references of the units' statements and proofs: ``seen`` (all), ``unresolved`` (to
    a label defined nowhere), ``kept`` (each gave a dependency edge or a mention), and the rest by
    why they gave none: ``to_text`` (a section, a display or an item in running text),
    ``to_non_unit`` (a statement of a kind that is no unit: carried as context), ``to_self`` (the
    unit's own label, or the statement it is nested in)."""

    seen: int = 0
    kept: int = 0
    unresolved: int = 0
    to_text: int = 0
    to_non_unit: int = 0
    to_self: int = 0


class EdgeSet(BaseModel):
    """What ``extract_edges`` found: dependency ``edges``, ``mentions`` (each with its note),
    ``notes`` (references that give no edge and why), ``warnings`` (unknown labels in warn
    mode, mentions made to avoid a cycle, cycles broken), ``flags`` (per unit: unknown and
    duplicated labels it references) and ``references`` (counts)."""

    edges: list[Edge]
    mentions: list[Edge] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    warnings: list[IntakeWarning] = Field(default_factory=list)
    flags: list[UnitFlag] = Field(default_factory=list)
    references: ReferenceCounts = Field(default_factory=ReferenceCounts)


def build_graph(units: list[UnitSpec], edges: Iterable[Edge]) -> nx.DiGraph:
    g = nx.DiGraph()
    for u in units:
        g.add_node(u.id)
    for e in edges:
        if e.dependency:
            g.add_edge(e.unit, e.depends_on)
    return g


def _hosted_statements(catalogue: Catalogue, owner: dict[int, str]) -> dict[int, list[tuple[Statement, bool]]]:
    """The statements of no unit kind (a remark, a question, an example, ...) nested, at any
    depth, in a unit's statement or proof: unit statement index -> [(nested statement, whether
    it stands in that statement's proof, through any level of the nesting)]. Their text is the
    unit's text, so their references are the unit's references."""
    hosted: dict[int, list[tuple[Statement, bool]]] = {}
    for s in catalogue.statements:
        if s.index in owner or s.parent is None:
            continue
        in_proof, p, seen = s.in_parent_proof, s.parent, {s.index}
        while p is not None and p not in owner and p not in seen:
            seen.add(p)
            outer = catalogue.statements[p]
            in_proof, p = in_proof or outer.in_parent_proof, outer.parent
        if p is not None and p in owner:
            hosted.setdefault(p, []).append((s, in_proof))
    return hosted


def _ancestors(catalogue: Catalogue, index: int) -> set[int]:
    found: set[int] = set()
    parent = catalogue.statements[index].parent
    while parent is not None and parent not in found:
        found.add(parent)
        parent = catalogue.statements[parent].parent
    return found


def _unknown_message(ref: Reference, unit: str, catalogue: Catalogue) -> str:
    text = f"{ref.where}: {ref.shown} in {unit}: unknown label"
    for label, site in catalogue.labels.items():
        if "," in label and ref.label in [x.strip() for x in label.split(",")]:
            return (text + f" (the label {label!r} at {site.file}:{site.line} has a comma in it: LaTeX reads "
                    "it as one label, so this part of it is defined nowhere)")
    return text


def extract_edges(
    catalogue: Catalogue,
    units: list[UnitSpec],
    *,
    unknown_references: Literal["error", "warn"] = "error",
    term_edges: bool = True,
    notation_edges: bool = True,
    cycles: Literal["error", "break"] = "error",
    demote_later_closing: bool | None = None,
) -> EdgeSet:
    """Deterministic edges of ``units`` by the rule of the module docstring.

    Raises ``DagError`` listing every unknown label with file and line (``error`` mode), or
    every cycle of dependency evidence with its edges (``cycles = "error"``; with ``"break"``
    only the cycles that ``\\uses`` edges alone form). ``demote_later_closing``: a closing-sentence
    reference to a later statement is a mention (default ``DEMOTE_LATER_CLOSING``)."""
    with paused_gc():
        return _extract_edges(catalogue, units, unknown_references, term_edges, notation_edges, cycles,
                              DEMOTE_LATER_CLOSING if demote_later_closing is None else demote_later_closing)


def _extract_edges(catalogue: Catalogue, units: list[UnitSpec], unknown_references: str, term_edges: bool,
                   notation_edges: bool, cycles: Literal["error", "break"], demote: bool) -> EdgeSet:
    counts = ReferenceCounts()
    flags: list[UnitFlag] = []
    owner = {i: u.id for u in units for i in u.statements}
    order = {u.id: u.order for u in units}
    candidates: dict[tuple[str, str, str], Edge] = {}
    mentions: list[Edge] = []
    notes: list[str] = []
    warnings: list[IntakeWarning] = []
    unknown: list[str] = []
    has_uses = catalogue.has_uses  # term and title edges only without \uses
    uses_targets: dict[tuple[int, bool], set[str | None]] = {}  # (statement, in proof) -> units its \uses name
    for s in catalogue.statements:
        for r in s.references:
            if r.macro == "uses":
                site = catalogue.labels.get(r.label)
                uses_targets.setdefault((s.index, r.in_proof), set()).add(
                    owner.get(site.statement_index) if site is not None and site.statement_index is not None else None)

    hosted = _hosted_statements(catalogue, owner)

    def add(edge: Edge) -> None:
        key = (edge.unit, edge.depends_on, edge.origin)
        if key not in candidates:
            candidates[key] = edge
        elif not edge.in_proof and candidates[key].in_proof:
            candidates[key] = edge  # statement evidence wins: the statement needs it

    for unit in units:
        for index in unit.statements:
            stmt = catalogue.statements[index]
            ancestors = _ancestors(catalogue, index) if stmt.parent is not None else set()
            inside = [(ref, ancestors, index) for ref in stmt.references]
            for inner, in_proof in hosted.get(index, []):
                # a remark, a question, ... nested in the statement or its proof: its references
                # are the unit's (in its proof when the nesting is); its own label is itself
                around = _ancestors(catalogue, inner.index) | {inner.index}
                inside += [(ref.model_copy(update={"in_proof": True}) if in_proof and not ref.in_proof else ref,
                            around, inner.index) for ref in inner.references]
            for ref, ancestors, _ in inside:
                counts.seen += 1
                site = catalogue.labels.get(ref.label)
                if site is None:
                    counts.unresolved += 1
                    message = _unknown_message(ref, unit.id, catalogue)
                    unknown.append(message)
                    flags.append(UnitFlag(unit=unit.id, rule="unknown-reference",
                                          message=message + " (LaTeX prints ??)"))
                    if ref.macro == "uses":
                        flags.append(UnitFlag(
                            unit=unit.id, rule="incomplete-dependencies",
                            message=f"{ref.where}: \\uses{{{ref.label}}} names a label defined nowhere: the "
                            f"declared dependencies of {unit.id} are incomplete"))
                    continue
                if ref.label in catalogue.duplicate_labels:
                    places = catalogue.duplicate_labels[ref.label]
                    flags.append(UnitFlag(
                        unit=unit.id, rule="duplicate-label",
                        message=f"{ref.where}: {ref.shown} names a label defined {len(places)} times "
                        f"({', '.join(places)}); read as the last, as LaTeX does"))
                if site.statement_index is None:
                    counts.to_text += 1
                    continue  # running text (a section, a display: carried as context)
                if site.statement_index in ancestors:
                    counts.to_self += 1
                    continue  # the enclosing statement
                target = owner.get(site.statement_index)
                if target is None:
                    counts.to_non_unit += 1
                    other = catalogue.statements[site.statement_index]
                    notes.append(f"{ref.where}: {unit.id} refers to {other.display} ({other.kind}, not a unit kind); "
                                 "no edge (carried into problem.tex as context)")
                    continue
                if target == unit.id:
                    counts.to_self += 1
                    continue
                counts.kept += 1
                evidence = f"{ref.where} {ref.shown}"
                origin: EdgeOrigin = "ref"
                note = None
                if ref.macro == "uses":
                    origin = "uses"
                elif site.display is not None:
                    origin = "display"
                    if site.in_proof:
                        note = f"cites a display inside the proof of {target}, not its statement"
                elif ref.closing:
                    origin = "closing"
                    if demote and order[target] > order[unit.id]:
                        note = f"a closing remark naming the later statement {target}"
                listed = uses_targets.get((index, ref.in_proof))
                if note is None and origin != "uses" and listed is not None and target not in listed:
                    scope = "proof" if ref.in_proof else "statement"
                    note = f"not in the {scope}'s \\uses (\\uses are authoritative)"
                edge = Edge(unit=unit.id, depends_on=target, origin=origin, in_proof=ref.in_proof, evidence=evidence,
                            dependency=note is None, note=note)
                if note is None:
                    add(edge)
                else:
                    mentions.append(edge)
            if stmt.parent is not None:
                # the unit it is stated inside, through any statements of no unit kind between
                # (a claim in a remark in a proof is stated inside the proof's unit)
                parent, in_proof, seen = stmt.parent, stmt.in_parent_proof, {index}
                while parent is not None and parent not in owner and parent not in seen:
                    seen.add(parent)
                    around = catalogue.statements[parent]
                    parent, in_proof = around.parent, in_proof or around.in_parent_proof
                outer = owner.get(parent) if parent is not None else None
                if outer is not None and outer != unit.id:
                    p = stmt.provenance
                    add(Edge(unit=outer, depends_on=unit.id, origin="nested", in_proof=in_proof,
                             evidence=f"{p} {stmt.display} is stated inside it"))
    if unknown:
        if unknown_references == "error":
            shown = "\n  ".join(unknown[:20])
            more = f"\n  ... and {len(unknown) - 20} more" if len(unknown) > 20 else ""
            raise DagError(
                f"{len(unknown)} reference(s) to labels defined nowhere in the document:\n  {shown}{more}",
                hint="fix the labels, include the files that define them, or set "
                '[intake] unknown_references = "warn" in fyan.toml (`fyan init --unknown-references warn`)',
            )
        for u in unknown:
            where, _, message = u.partition(": ")
            warnings.append(IntakeWarning(code="unknown-label", where=where, message=message + "; no edge"))

    strong = [e for e in candidates.values() if e.origin not in WEAK_ORIGINS]
    weak = [e for e in candidates.values() if e.origin in WEAK_ORIGINS]
    kept, demoted, cycle_warnings = resolve_cycles(catalogue, units, strong, cycles)
    mentions += demoted
    warnings += cycle_warnings
    graph = build_graph(units, kept)
    if (term_edges or notation_edges) and not has_uses:
        keyed, implied = _keyed_edges(catalogue, units, graph, terms=term_edges, notation=notation_edges)
        weak += keyed
        mentions += implied
    added, closing = _add_weak(units, graph, weak)
    for e in closing:
        warnings.append(IntakeWarning(code="mention", where=e.evidence.split(" ", 1)[0],
                                      message=f"{e.unit} -> {e.depends_on} ({e.origin}) kept as a mention: {e.note}"))
    mentions += closing
    edges, implied = _drop_implied(graph, kept + added)
    mentions += implied
    return EdgeSet(edges=edges, mentions=_unique(mentions), notes=notes, warnings=warnings, flags=flags,
                   references=counts)


#: Keyed evidence (a statement uses a definition's term, title or notation): dropped where the
#: rest of the graph already implies it (rule 5).
KEYED_ORIGINS = frozenset({"title", "term", "notation"})


def _drop_implied(graph: nx.DiGraph, edges: list[Edge]) -> tuple[list[Edge], list[Edge]]:
    """Rule 5 (module docstring): a term, title or notation edge ``u -> d`` is redundant for
    scheduling, and becomes a mention naming the path, when the graph already orders the pair

    (a) through a chain of dependencies each *stronger* than it (the transitive closure of
        stronger evidence: ``u`` cites ``x`` by reference, ``x`` cites ``d``), or
    (b) through a unit that ``u``'s *statement* itself cites by stronger evidence (a reference
        or a cited display in the statement), whatever makes that unit depend on ``d``: what
        the statement cites is in its scope with everything it needs.

    A dependency of the proof alone followed by weak evidence does not make the statement's own
    use of a definition redundant (the statement needs the definition to be stated). ``graph``
    is the final dependency graph (every edge of ``edges`` in it); it loses the dropped edges.
    The redundant edges of a DAG can all go at once without changing what is reachable.
    Returns (kept edges, mentions), in the order of ``edges``."""
    best: dict[tuple[str, str], int] = {}  # strongest evidence of each pair, any scope
    stated: dict[tuple[str, str], int] = {}  # strongest evidence of each pair in the statement
    for e in edges:
        p = (e.unit, e.depends_on)
        best[p] = max(best.get(p, 0), e.strength)
        if not e.in_proof:
            stated[p] = max(stated.get(p, 0), e.strength)
    graphs: dict[int, nx.DiGraph] = {}

    def over(level: int) -> nx.DiGraph:
        """The dependencies stronger than ``level``."""
        if level not in graphs:
            g = nx.DiGraph([p for p, v in best.items() if v > level])
            g.add_nodes_from(graph)
            graphs[level] = g
        return graphs[level]

    cache: dict[tuple[int, str], set[str]] = {}

    def below(level: int, node: str) -> set[str]:
        if (level, node) not in cache:
            cache[(level, node)] = nx.descendants(over(level), node)
        return cache[(level, node)]

    def route(e: Edge, first: dict[tuple[str, str], int], level: int) -> list[str] | None:
        for s in sorted(graph.successors(e.unit)):
            if s != e.depends_on and first.get((e.unit, s), 0) > e.strength and e.depends_on in below(level, s):
                return nx.shortest_path(over(level), s, e.depends_on)
        return None

    dropped: list[Edge] = []
    keep: list[Edge] = []
    for e in edges:
        if e.origin not in KEYED_ORIGINS:
            keep.append(e)
            continue
        path = route(e, best, e.strength) or route(e, stated, 0)
        if path is None:
            keep.append(e)
            continue
        dropped.append(e.model_copy(update={
            "dependency": False,
            "note": f"implied by {' -> '.join([e.unit, *path])} (redundant for scheduling)"}))
    pairs = {(e.unit, e.depends_on) for e in keep}
    for e in dropped:
        if (e.unit, e.depends_on) not in pairs and graph.has_edge(e.unit, e.depends_on):
            graph.remove_edge(e.unit, e.depends_on)
    return keep, dropped


def _unique(edges: list[Edge]) -> list[Edge]:
    seen: dict[tuple[str, str, str], Edge] = {}
    for e in edges:
        seen.setdefault((e.unit, e.depends_on, e.origin), e)
    return list(seen.values())


def _add_weak(units: list[UnitSpec], graph: nx.DiGraph, weak: list[Edge]) -> tuple[list[Edge], list[Edge]]:
    """Add weak evidence strongest first where it closes no cycle (rule 4); the rest become
    mentions. Returns (added edges, mentions)."""
    order = {u.id: u.order for u in units}
    # the latest document position reachable from each node: a node cannot reach a unit that
    # comes after everything it reaches, so most checks need no graph search
    reach_max: dict[str, int] = {}
    for node in reversed(list(nx.topological_sort(graph))):
        reach_max[node] = max([order[node]] + [reach_max[s] for s in graph.successors(node)])
    added: list[Edge] = []
    demoted: list[Edge] = []
    pairs: set[tuple[str, str]] = set(graph.edges)
    for e in sorted(weak, key=lambda e: (-e.strength, order[e.unit], order[e.depends_on])):
        if (e.unit, e.depends_on) in pairs:
            added.append(e)
            continue
        if reach_max[e.depends_on] >= order[e.unit] and nx.has_path(graph, e.depends_on, e.unit):
            path = nx.shortest_path(graph, e.depends_on, e.unit)
            demoted.append(e.model_copy(update={
                "dependency": False, "note": f"it would close the cycle {' -> '.join([e.unit] + path)}"}))
            continue
        graph.add_edge(e.unit, e.depends_on)
        pairs.add((e.unit, e.depends_on))
        added.append(e)
        if reach_max[e.depends_on] > reach_max[e.unit]:  # propagate the new reach to the ancestors
            todo = [e.unit]
            value = reach_max[e.depends_on]
            while todo:
                node = todo.pop()
                if reach_max[node] >= value:
                    continue
                reach_max[node] = value
                todo.extend(graph.predecessors(node))
    return added, demoted


def _where(catalogue: Catalogue, units: list[UnitSpec], uid: str) -> str:
    """A unit's place in the document (file relative to the main file's folder, lines or page)."""
    for u in units:
        if u.id == uid:
            return str(catalogue.statements[u.statements[0]].provenance)
    return uid


def resolve_cycles(catalogue: Catalogue, units: list[UnitSpec], edges: list[Edge],
                   mode: Literal["error", "break"]) -> tuple[list[Edge], list[Edge], list[IntakeWarning]]:
    """Find every cycle of ``edges`` (rule 3 of the module docstring).

    ``mode = "error"``: raise ``DagError`` naming all of them, each edge with its evidence.
    ``mode = "break"``: demote the weakest edge of each to a mention (with a note and a
    warning), except that cycles formed by ``\\uses`` edges alone (every step declared by the
    author) still raise ``DagError``: there is no weaker edge to break. Returns (kept edges,
    demoted edges, warnings)."""
    order = {u.id: u.order for u in units}
    by_pair: dict[tuple[str, str], list[Edge]] = {}
    for e in edges:
        if e.dependency:
            by_pair.setdefault((e.unit, e.depends_on), []).append(e)
    if mode == "break":
        declared = [e for e in edges if e.dependency and e.origin == "uses"]
        found = _cycles(build_graph(units, declared), by_pair, order)
        if found:
            _raise_cycles(catalogue, units, found, by_pair, declared=True)
    found = _cycles(build_graph(units, edges), by_pair, order)
    if not found:
        return edges, [], []
    if mode == "error":
        _raise_cycles(catalogue, units, found, by_pair)
    demoted: list[Edge] = []
    warnings: list[IntakeWarning] = []
    dropped = {weakest for _, weakest in found}
    for cycle, weakest in found:
        path = " -> ".join([a for a, _ in cycle] + [cycle[0][0]])
        for e in by_pair[weakest]:
            demoted.append(e.model_copy(update={"dependency": False,
                                                "note": f"demoted to break the cycle {path} (its weakest edge)"}))
        warnings.append(IntakeWarning(
            code="cycle", where=by_pair[weakest][0].evidence.split(" ", 1)[0],
            message=f"cycle {path}: the edge {weakest[0]} -> {weakest[1]} "
            f"({', '.join(e.origin for e in by_pair[weakest])}, {by_pair[weakest][0].evidence}) is its weakest "
            "edge: kept as a mention"))
    kept = [e for e in edges if (e.unit, e.depends_on) not in dropped]
    return kept, demoted, warnings


def _cycles(graph: nx.DiGraph, by_pair: dict[tuple[str, str], list[Edge]], order: dict[str, int]
            ) -> list[tuple[list[tuple[str, str]], tuple[str, str]]]:
    """Every cycle of ``graph``, one at a time, each with its weakest edge (lowest strength; a
    forward reference before a backward one), which is removed before the next is searched."""
    found: list[tuple[list[tuple[str, str]], tuple[str, str]]] = []
    while not nx.is_directed_acyclic_graph(graph):  # linear; cycles are searched only inside a component
        component = next(c for c in nx.strongly_connected_components(graph) if len(c) > 1)
        cycle = [(a, b) for a, b in nx.find_cycle(graph.subgraph(component))]
        weakest = min(cycle, key=lambda p: (max(e.strength for e in by_pair[p]),
                                            0 if order[p[1]] > order[p[0]] else 1, -order[p[0]]))
        found.append((cycle, weakest))
        graph.remove_edge(*weakest)
    return found


def _raise_cycles(catalogue: Catalogue, units: list[UnitSpec], found: list, by_pair: dict,
                  declared: bool = False) -> None:
    """Raise ``DagError`` naming every cycle of ``found`` (``_cycles``), each edge with its
    evidence; ``declared``: the cycles ``\\uses`` edges alone form."""
    blocks = []
    for n, (cycle, weakest) in enumerate(found, start=1):
        steps = [f"{a} ({_where(catalogue, units, a)}) depends on {b}: "
                 + "; ".join(f"{e.origin}, {e.evidence}" for e in by_pair[(a, b)]) for a, b in cycle]
        blocks.append(f"cycle {n}:\n    " + "\n    ".join(steps)
                      + ("" if declared else f"\n    weakest edge: {weakest[0]} -> {weakest[1]}"))
    if declared:
        raise DagError(
            f"{len(found)} dependency cycle(s) formed by \\uses alone:\n  " + "\n  ".join(blocks),
            hint="every edge of these cycles is declared with \\uses, so none is weaker than another: "
            "remove the \\uses that is wrong in each")
    raise DagError(
        f"{len(found)} dependency cycle(s):\n  " + "\n  ".join(blocks),
        hint="remove or reword one reference of each cycle (a mention is not a dependency), or let Fyan "
        "demote the weakest edge of each: `fyan init --cycles break` ([intake] cycles = \"break\")",
    )


# -- defined terms and titles -----------------------------------------------------------------

#: Generic words of mathematical prose: one of them alone is a key only for the definition
#: whose title it is (the definition of that very word, "Definition (Law)"); marked up
#: anywhere else it is emphasis or a passing use ("the sum is \\emph{finite}").
GENERIC_WORDS = frozenset(
    "set map function element number object space point property condition case notation example result "
    "statement definition theorem lemma proposition corollary remark claim proof equation formula law rule type "
    "structure operation relation value form system class family sequence collection order degree size length "
    "rank dimension density measure distance norm metric lattice group ring field module algebra graph word "
    "alphabet letter variable term expression identity model theory language periodic finite infinite "
    "satisfies satisfy holds defined well-defined product sum limit series cover covering basis span subspace "
    "subgroup".split())


def _generic(key: str) -> bool:
    """One generic word in lower case (a capitalised name such as ``Sets`` is not generic)."""
    words = key.split()
    if len(words) != 1 or words[0] != words[0].lower():
        return False
    w = words[0]
    return w in GENERIC_WORDS or w.rstrip("s") in GENERIC_WORDS or (w.endswith("es") and w[:-2] in GENERIC_WORDS)

# a statement's title stays: it is evidence
_META = re.compile(r"\\(?:label|uses|leanok|lean|ref|cref|Cref|eqref|autoref|mathlibok|notready|discussion)"
                   r"(?![A-Za-z])\*?(?:\s*\{[^{}]*\})?|(?<!\\)%[^\n]*|\\begin\s*\{[^{}]*\}|\\end\s*\{[^{}]*\}")


def definition_keys(stmt: Statement) -> list[tuple[str, re.Pattern[str], bool]]:
    """What a definition defines, as (shown key, pattern, case-sensitive): its defined terms
    (definition markup), and its title; a single generic word (``GENERIC_WORDS``) only as the
    definition's own title word ("Definition (Law)"), a name (``Sets``) with its case."""
    keys: list[tuple[str, re.Pattern[str], bool]] = []
    title = " ".join(fold_case_kept(stmt.title or "").split()).strip(" .,;:")
    terms = set()
    for term in stmt.defined_terms:
        term = " ".join(fold_case_kept(term).split())  # PDF and Markdown terms are folded here
        if not term or (_generic(term) and term.lower() != title.lower()):
            continue
        terms.add(term.lower())
        sensitive = term != term.lower()
        keys.append((f'term "{term}"', _word_pattern(term, sensitive), sensitive))
    formula = bool(re.fullmatch(r"\s*(?:\$[^$]+\$|\\\([^$]+\\\))\s*", stmt.title or ""))
    if title and title.lower() not in terms and not _generic(title) and not formula:  # a formula: notation
        if len(title) >= 4 or _symbol_only(title):
            keys.append((f'title "{title}"', _word_pattern(title.lower(), False), False))
    return keys


#: What a definition names as its own, in plain words: its subject ("The periodic sphere packing
#: constant is defined to be"), its object ("We define the density of ..."), or a heading in
#: parentheses that opens it ("{($E_8$-lattice, Definition 2)}").
_OWN = re.compile(
    r"(?:^|(?<=[.:;!?]))\s*(?:the|an?)\s+(?P<subject>[A-Za-z][\w'-]*(?:\s+[A-Za-z][\w'-]*){0,5}?)\s+"
    r"(?:is|are)\s+(?:defined|called|said|given|denoted)\b"
    r"|\bdefine\s+(?:the|an?)\s+(?P<object>[A-Za-z][\w'-]*(?:\s+[A-Za-z][\w'-]*){0,5}?)\s+"
    r"(?:to\s+be|as|by|of|for|on|in|with)\b"
    r"|^\s*\((?P<heading>[^()\n]{2,80})\)",
    re.IGNORECASE)


def _mask_own(text: str) -> str:
    """A definition's folded text with what it names as its own (``_OWN``) blanked: a key of an
    earlier definition found there is part of this definition's own name ("sphere packing
    constant" in "periodic sphere packing constant"), not a use of it."""
    spans = []
    for m in _OWN.finditer(text):
        for name in ("subject", "object", "heading"):
            if m.group(name):
                spans.append(m.span(name))
    for start, end in spans:
        text = text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]
    return text


def _symbol_only(key: str) -> bool:
    """A key that is a symbol, not a word (``\\eta``, ``X_n``): fewer than three letters
    outside control sequences."""
    return len(re.findall(r"[A-Za-z]", re.sub(r"\\[A-Za-z@]+", "", key))) < 3


def _word_pattern(term: str, case_sensitive: bool) -> re.Pattern[str]:
    """``term`` on word and number boundaries ("Equation 1" is not in "Equation 14" nor in
    "Equation 1.5"), spaces matching any run of spaces, with a plural ending when it ends in a
    letter."""
    body = r"\s+".join(re.escape(w) for w in term.split())
    plural = r"(?:s|es)?" if term[-1:].isalpha() and not _symbol_only(term) else ""
    prime = r"(?!')" if _symbol_only(term) else ""  # \theta is not \theta'
    return re.compile(r"(?<![\w\\])" + body + plural + r"(?!\w)(?![.,]\d)" + prime,
                      0 if case_sensitive else re.IGNORECASE)


#: A key found in more than this share of the statements after its definition (and in at least
#: ``PERVASIVE_MIN`` of them) is the document's own vocabulary ("law" in a book about laws): it
#: gives no edges. Measured on the corpus blueprints: such edges are almost never in their
#: \uses (equational_theories' "law": 3 of 64), while the discriminating ones are (brownian
#: motion's "Kolmogorov condition", in 42 % of the later statements: 21 of 23).
PERVASIVE_SHARE = 0.5
PERVASIVE_MIN = 8


@dataclass
class _Choice:
    """A definition a statement uses by a key: the kind of evidence, the key as shown, and the
    line of the first use."""

    origin: EdgeOrigin
    shown: str
    line: int


def _term_choices(catalogue: Catalogue, units: list[UnitSpec]) -> dict[str, dict[str, _Choice]]:
    """For each unit, the earlier definitions whose title or defined term its statement uses
    (module docstring): a key that several definitions define goes to the latest one before the
    statement (the definition in force); a pervasive key (``PERVASIVE_SHARE``) gives none; a
    definition that defines a key again uses its own."""
    definitions: list[tuple[UnitSpec, list[tuple[str, re.Pattern[str], bool]]]] = []
    for u in units:
        if u.kind == "definition":
            keys = definition_keys(catalogue.statements[u.statements[0]])
            if keys:
                definitions.append((u, keys))
    if not definitions:
        return {}
    texts: dict[str, tuple[str, str]] = {}
    for unit in units:
        stmt = catalogue.statements[unit.statements[0]]
        kept = fold_case_kept(_META.sub(" ", stmt.body))
        if stmt.kind == "definition":
            kept = _mask_own(kept)
        texts[unit.id] = (kept, kept.lower())
    # every (definition, key) occurrence: unit -> match. The units to search for a key are the
    # later ones whose text has the key's first word token (an index of word tokens: linear in
    # the document, not in definitions x statements)
    words: dict[str, list[UnitSpec]] = {}
    for unit in units:
        for w in set(re.findall(r"\w+", texts[unit.id][1])):
            words.setdefault(w, []).append(unit)
    orders = sorted(u.order for u in units)
    found: dict[tuple[str, str], dict[str, re.Match]] = {}
    for d, keys in definitions:
        for shown, pattern, sensitive in keys:
            needle = shown.split('"', 1)[1][:-1]
            first = (needle if sensitive else needle.lower()).split()[0]
            token = re.search(r"\w+", first.lower())
            if token is None:
                candidates: Iterable[UnitSpec] = units
            else:
                t = token.group(0)
                candidates = {u.id: u for w in (t, t + "s", t + "es") for u in words.get(w, ())}.values()
            hits: dict[str, re.Match] = {}
            for unit in sorted(candidates, key=lambda u: u.order):
                if unit.order <= d.order:
                    continue
                text = texts[unit.id][0 if sensitive else 1]
                if first not in text:
                    continue  # cheap test first
                m = pattern.search(text)
                if m is not None:
                    hits[unit.id] = m
            later = len(orders) - bisect_right(orders, d.order)
            if len(hits) >= PERVASIVE_MIN and len(hits) > PERVASIVE_SHARE * later:
                continue
            found[(d.id, shown)] = hits
    # the definition in force: for each unit and key text, the latest definition before it
    by_key: dict[str, list[tuple[UnitSpec, str]]] = {}
    for d, keys in definitions:
        for shown, _, sensitive in keys:
            if (d.id, shown) in found:
                key = shown.split('"', 1)[1][:-1]
                by_key.setdefault(key if sensitive else key.lower(), []).append((d, shown))
    rank = {key: i for i, key in enumerate(by_key)}
    keys_of: dict[str, set[str]] = {}  # unit -> the keys some definition's hits put in it
    for key, defs in by_key.items():
        defs.sort(key=lambda x: -x[0].order)
        for d, shown in defs:
            for uid in found[(d.id, shown)]:
                keys_of.setdefault(uid, set()).add(key)
    out: dict[str, dict[str, _Choice]] = {}
    for unit in units:
        if unit.id not in keys_of:
            continue
        stmt = catalogue.statements[unit.statements[0]]
        chosen: dict[str, _Choice] = {}
        own = ({k[0].split('"', 1)[1][:-1].lower() for k in definition_keys(stmt)}
               if stmt.kind == "definition" else set())  # a definition that defines a key again redefines it
        for key in sorted(keys_of[unit.id], key=rank.__getitem__):
            for d, shown in by_key[key]:
                m = found[(d.id, shown)].get(unit.id)
                if m is not None:
                    if shown.split('"', 1)[1][:-1].lower() not in own and d.id not in chosen:
                        line = stmt.provenance.line_start + texts[unit.id][0].count("\n", 0, m.start())
                        chosen[d.id] = _Choice("title" if shown.startswith("title") else "term", shown, line)
                    break
        if chosen:
            out[unit.id] = chosen
    return out


def _notation_choices(catalogue: Catalogue, units: list[UnitSpec]) -> dict[str, dict[str, _Choice]]:
    """For each unit, the earlier definitions whose notation its statement uses
    (``fyan.specifier.notation``): each symbol used goes to the best-matching symbol a definition
    introduces, the latest such definition before the statement on a tie, the statement's own
    symbols included; generic symbols give nothing, and neither does a pervasive symbol
    (``PERVASIVE_SHARE``)."""
    macros = Macros.from_definitions(catalogue.macros)
    defs = [u for u in units if u.kind == "definition"]
    if not defs:
        return {}

    def read(u: UnitSpec) -> list[Notation]:
        s = catalogue.statements[u.statements[0]]
        return definition_notation(s.body, macros, s.defined_terms, s.title)

    first = {u.id: read(u) for u in defs}
    # an owned macro whose expansion is generic (\\newcommand{\\E}{E}) stays as written everywhere
    macros.owned = {n.owned[1:] for notes in first.values() for n in notes if n.owned and n.generic_expansion}
    notes = {u.id: read(u) for u in defs} if macros.owned else first
    # the symbols a use can match (``score`` is None for the rest): same head, and the same
    # subscript unless the symbol's subscript is a slot (a variable); in definition order
    by_sub: dict[tuple[str, str | None], list[tuple[int, int, str, Notation]]] = {}
    slots: dict[str, list[tuple[int, int, str, Notation]]] = {}
    position = 0
    for u in defs:
        for n in notes[u.id]:
            entry = (position, u.order, u.id, n)
            position += 1
            if n.sub_slot and n.atom.sub is not None:
                slots.setdefault(n.atom.head, []).append(entry)
            else:
                by_sub.setdefault((n.atom.head, n.atom.sub), []).append(entry)
    hits: dict[tuple[str, tuple], dict[str, _Choice]] = {}  # (definition, symbol) -> unit -> choice
    for unit in units:
        stmt = catalogue.statements[unit.statements[0]]
        for use in statement_uses(stmt.body, macros):
            best: tuple[int, int] | None = None
            pick: tuple[str, Notation] | None = None
            candidates = by_sub.get((use.head, use.sub), [])
            if use.sub is not None and use.head in slots:
                candidates = sorted(candidates + slots[use.head], key=lambda x: x[0])
            for _, order, did, n in candidates:
                if order > unit.order:
                    continue
                value = score(n, use)
                if value is None or (best is not None and (value, order) <= best):
                    continue
                best, pick = (value, order), (did, n)
            if pick is None or pick[0] == unit.id or pick[1].generic:
                continue  # the statement's own symbol, or one too generic to tell
            did, n = pick
            line = stmt.provenance.line_start + stmt.body.count("\n", 0, use.start)
            hits.setdefault((did, n.key), {}).setdefault(unit.id, _Choice("notation", f"notation ${n.shown()}$", line))
    order = {u.id: u.order for u in units}
    orders = sorted(order.values())
    out: dict[str, dict[str, _Choice]] = {}
    for (did, _), found in hits.items():
        later = len(orders) - bisect_right(orders, order[did])
        if len(found) >= PERVASIVE_MIN and len(found) > PERVASIVE_SHARE * later:
            continue
        for uid, choice in found.items():
            known = out.setdefault(uid, {}).get(did)
            if known is None or choice.line < known.line:
                out[uid][did] = choice
    return out


def _keyed_edges(catalogue: Catalogue, units: list[UnitSpec], graph: nx.DiGraph, *, terms: bool,
                 notation: bool) -> tuple[list[Edge], list[Edge]]:
    """Term, title and notation edges (module docstring), each from a statement to an earlier
    definition it is not already connected to, checked against ``graph`` for implied
    reachability. Returns (edges, mentions): an implied one is a mention naming the path."""
    choices: dict[str, dict[str, _Choice]] = {}
    sources = ([_term_choices(catalogue, units)] if terms else []) + \
        ([_notation_choices(catalogue, units)] if notation else [])
    for found in sources:
        for uid, chosen in found.items():
            mine = choices.setdefault(uid, {})
            for did, choice in chosen.items():
                known = mine.get(did)
                if known is None or STRENGTH[choice.origin][0] > STRENGTH[known.origin][0]:
                    mine[did] = choice
    out: list[Edge] = []
    implied_edges: list[Edge] = []
    by_order = {u.id: u.order for u in units}
    work = graph.copy()  # the graph with the keyed edges of earlier statements
    closure = _Closure(graph)
    for unit in sorted(units, key=lambda u: u.order):
        chosen = choices.get(unit.id)
        if not chosen:
            continue
        stmt = catalogue.statements[unit.statements[0]]
        # implied edges add nothing: a definition reachable from the statement through its
        # references, or from another definition it uses ("sphere packing constant" implies
        # "sphere packing")
        reach = closure.below(unit.id)
        via_other = {other: closure.below_with_keyed(other) for other in chosen if other in work}
        for did, choice in sorted(chosen.items(), key=lambda x: by_order[x[0]]):
            evidence = (f"{stmt.provenance.file}:{choice.line} {choice.shown}" if stmt.provenance.page_start is None
                        else f"{stmt.provenance} {choice.shown}")
            edge = Edge(unit=unit.id, depends_on=did, origin=choice.origin, evidence=evidence)
            if closure.has(reach, did):
                path = nx.shortest_path(graph, unit.id, did)
            else:
                other = next((o for o, below in sorted(via_other.items()) if closure.has(below, did)), None)
                path = [unit.id, *nx.shortest_path(work, other, did)] if other is not None else None
            if path is not None:
                implied_edges.append(edge.model_copy(update={
                    "dependency": False, "note": f"implied by {' -> '.join(path)} (redundant for scheduling)"}))
                continue
            out.append(edge)
            work.add_edge(unit.id, did)
            closure.add_keyed(unit.id, did)
    return out, implied_edges


class _Closure:
    """Reachability in a DAG as one integer bit set per node (bit ``i`` for the ``i``-th node):
    the descendants of every node, computed once in reverse topological order (linear in the
    edges, each step a machine-word OR over the nodes), and the descendants in the DAG plus the
    keyed edges added so far (``add_keyed``), followed from the bit sets on demand. Replaces a
    graph search per statement (the DAG builder scales with the document)."""

    def __init__(self, graph: nx.DiGraph) -> None:
        self.index = {n: i for i, n in enumerate(graph.nodes)}
        self.nodes = list(graph.nodes)
        self.desc: dict[str, int] = {}
        for node in reversed(list(nx.topological_sort(graph))):
            bits = 0
            for s in graph.successors(node):
                bits |= self.desc[s] | (1 << self.index[s])
            self.desc[node] = bits
        self.keyed: dict[str, list[str]] = {}
        self.keyed_bits = 0  # nodes with keyed edges

    def below(self, node: str) -> int:
        """Descendants of ``node`` in the DAG (bit set)."""
        return self.desc.get(node, 0)

    def has(self, bits: int, node: str) -> bool:
        i = self.index.get(node)
        return i is not None and bool(bits >> i & 1)

    def add_keyed(self, unit: str, target: str) -> None:
        for n in (unit, target):
            if n not in self.index:
                self.index[n] = len(self.nodes)
                self.nodes.append(n)
        self.keyed.setdefault(unit, []).append(target)
        self.keyed_bits |= 1 << self.index[unit]

    def below_with_keyed(self, node: str) -> int:
        """Descendants of ``node`` through the DAG's edges and the keyed edges added so far."""
        bits = self.below(node)
        done = 0
        todo = ((bits | (1 << self.index[node])) if node in self.index else bits) & self.keyed_bits
        while todo:
            low = todo & -todo
            todo ^= low
            done |= low
            for target in self.keyed[self.nodes[low.bit_length() - 1]]:
                bits |= self.below(target) | (1 << self.index[target])
            todo |= bits & self.keyed_bits & ~done
        return bits


def validate(catalogue: Catalogue, units: list[UnitSpec], edges: list[Edge], unit_kinds: list[str]) -> Dag:
    """Check units and edges (module docstring) and compute layers. Raises ``DagError``."""
    with paused_gc():
        return _validate(catalogue, units, edges, unit_kinds)


def _validate(catalogue: Catalogue, units: list[UnitSpec], edges: list[Edge], unit_kinds: list[str]) -> Dag:
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
    dependencies = [e for e in edges if e.dependency]
    for e in dependencies:
        for end in (e.unit, e.depends_on):
            if end not in known:
                raise DagError(f"edge {e.unit} -> {e.depends_on} ({e.evidence}): unknown unit {end!r}")
        if e.unit == e.depends_on:
            raise DagError(f"{e.evidence}: unit {e.unit} depends on itself")
    resolve_cycles(catalogue, units, dependencies, "error")
    g = build_graph(units, dependencies)
    return Dag(units=units, edges=dependencies, layers=compute_layers(g))


def compute_layers(g: nx.DiGraph) -> dict[str, int]:
    """Layer of each node: 0 without dependencies, else 1 + the deepest dependency's layer."""
    layers: dict[str, int] = {}
    for node in reversed(list(nx.topological_sort(g))):
        layers[node] = 1 + max((layers[d] for d in g.successors(node)), default=-1)
    return layers
