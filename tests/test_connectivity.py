"""Isolated statements and disconnected components: ``fyan.specifier.connectivity`` and
how the dashboard names them (``fyan drift`` is tested in tests/test_adopt_targets.py)."""

from __future__ import annotations

import pytest

from fyan.dashboard.render import connectivity_html
from fyan.specifier.connectivity import Connectivity, connectivity


def test_isolated_nodes_and_components_in_document_order_largest_first():
    nodes = ["a", "b", "c", "d", "e", "f", "g", "h"]
    edges = [("c", "b"), ("e", "d"), ("f", "e"), ("h", "h"), ("b", "zz")]  # a self-loop and an unknown node ignored
    c = connectivity(nodes, edges)
    assert c == Connectivity(isolated=("a", "g", "h"), components=(("d", "e", "f"), ("b", "c")))
    assert c.disconnected


@pytest.mark.parametrize("nodes, edges, isolated, components", [
    ([], [], (), ()),
    (["x"], [], ("x",), ()),
    (["x", "y", "z"], [("y", "x"), ("z", "y")], (), (("x", "y", "z"),)),
    (["p", "q", "r", "s"], [("s", "r"), ("q", "p")], (), (("p", "q"), ("r", "s"))),  # a tie: document order
    (["u", "u", "v"], [("v", "u"), ("u", "v")], (), (("u", "v"),)),  # repeats and both directions: one edge
])
def test_connectivity_family(nodes, edges, isolated, components):
    c = connectivity(nodes, edges)
    assert (c.isolated, c.components) == (isolated, components)
    assert c.disconnected is (len(components) > 1)


def test_the_dashboard_names_isolated_statements_and_components():
    units = [{"id": "u1", "label": "def:a", "depends_on": []}, {"id": "u2", "label": "lem:b", "depends_on": ["u1"]},
             {"id": "u3", "label": None, "depends_on": []}, {"id": "u4", "label": "lem:d", "depends_on": []},
             {"id": "u5", "label": "thm:e", "depends_on": ["u4"]}]
    html = connectivity_html(units)
    assert "1 isolated" in html and 'href="/unit/u3">u3</a>' in html
    assert "2 disconnected components" in html and "def:a, lem:b" in html and "lem:d, thm:e" in html
    connected = connectivity_html([{"id": "u1", "label": "a", "depends_on": []},
                                   {"id": "u2", "label": "b", "depends_on": ["u1"]}])
    assert "isolated" not in connected and "connected to the others" in connected
