"""Isolated statements and disconnected components of a blueprint's dependency graph.

A statement with no ``\\uses`` in or out, or a group of statements that no edge ties to the rest,
is usually a forgotten ``\\uses`` (a common request against blueprint dependency-graph tools).
``connectivity(nodes, edges)`` names them; ``fyan init``, ``fyan drift`` and the dashboard show
them. Weak connectivity (edge directions ignored) with networkx.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx


@dataclass(frozen=True)
class Connectivity:
    """``isolated``: the nodes with no edge in or out, in document order; ``components``: the
    weakly connected components of the other nodes, largest first (ties: the one whose first
    node comes first in the document), each in document order. One component means the graph
    is connected apart from the isolated nodes."""

    isolated: tuple[str, ...]
    components: tuple[tuple[str, ...], ...]

    @property
    def disconnected(self) -> bool:
        """More than one component (isolated nodes not counted)."""
        return len(self.components) > 1


def connectivity(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> Connectivity:
    """The ``Connectivity`` of the graph on ``nodes`` (in document order; repeats ignored) with
    ``edges`` (pairs of nodes, either direction; an edge naming a node not in ``nodes`` and a
    self-loop are ignored). Pure."""
    order = list(dict.fromkeys(nodes))
    rank = {n: i for i, n in enumerate(order)}
    g = nx.Graph()
    g.add_nodes_from(order)
    g.add_edges_from((a, b) for a, b in edges if a in rank and b in rank and a != b)
    isolated = tuple(n for n in order if g.degree(n) == 0)
    parts = [sorted(c, key=rank.__getitem__) for c in nx.connected_components(g) if len(c) > 1]
    parts.sort(key=lambda c: (-len(c), rank[c[0]]))
    return Connectivity(isolated=isolated, components=tuple(tuple(c) for c in parts))
