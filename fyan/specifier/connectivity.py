"""Isolated statements and disconnected parts of a dependency graph (networkx).

A user of dependency-graph tools asks for both (issue 25): a statement with no edge in or out
is often one whose references intake did not read, and a document that falls apart into
several components may have lost the edges between them. ``connectivity`` computes them for
the intake report of ``fyan init``; the adoption and dashboard views use the same function.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx


@dataclass(frozen=True)
class Connectivity:
    """``isolated``: the nodes with no edge in or out, in document order (the order of the
    ``nodes`` given). ``components``: the weakly connected components of the graph without its
    isolated nodes, largest first (ties: the one whose first node comes first), each in
    document order."""

    isolated: tuple[str, ...]
    components: tuple[tuple[str, ...], ...]


def connectivity(nodes: Sequence[str], edges: Iterable[tuple[str, str]]) -> Connectivity:
    """Isolated nodes and weakly connected components of the directed graph ``nodes`` (unit
    ids, in document order) and ``edges`` (``(unit, depends_on)`` pairs; direction is ignored).
    An edge naming a node outside ``nodes`` adds that node after the given ones. A self-loop
    does not connect a node to anything. Linear in nodes + edges."""
    g = nx.Graph()
    g.add_nodes_from(nodes)
    g.add_edges_from((a, b) for a, b in edges if a != b)
    position = {n: i for i, n in enumerate(g.nodes)}  # insertion order: the given order first
    isolated = tuple(n for n in g.nodes if g.degree(n) == 0)
    parts = [sorted(c, key=position.__getitem__) for c in nx.connected_components(g) if len(c) > 1]
    parts.sort(key=lambda c: (-len(c), position[c[0]]))
    return Connectivity(isolated=isolated, components=tuple(tuple(c) for c in parts))
