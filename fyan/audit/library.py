"""Redefinitions of what the library has: a finding the semantic audit asks the plan to justify.

The Planner records, for each definition node of its lemma DAG, the existing library
declaration that is the same notion (``LemmaNode.library``: a document's "group" is Mathlib's
``Group``), after Fyan found that name in the project's compiled environment (the plan's name
check, ``fyan.gates.stages.cited_names_problem``). A definition node that names such a
declaration but does not use it in its own scaffold declaration redefines something the
library has: statements about the new notion would not be statements about the library's, and
nothing downstream could use the library's lemmas. The audit (``fyan.audit.decide``) then routes
the unit back to the Planner — use the library's definition, or justify the new one in the
blueprint with a line ``Redefines `X`: <why the document's notion differs>``.
"""

from __future__ import annotations

import re

from fyan.models.replies import LemmaDag
from fyan.lean import declarations


def _mentions(text: str, name: str) -> bool:
    """Whether Lean text mentions declaration ``name`` (its full name, or its last component
    after an ``open``), as a whole identifier."""
    last = name.split(".")[-1]
    return any(re.search(rf"(?<![\w.'!?]){re.escape(n)}(?![\w'!?])", text) for n in {name, last})


def justified(blueprint: str, name: str) -> bool:
    """The blueprint has a line ``Redefines `name`: <reason>`` (a reason that is not empty)."""
    pattern = rf"(?mi)^\s*(?:[-*]\s*)?Redefines\s+`?{re.escape(name)}`?\s*:\s*\S"
    return re.search(pattern, blueprint) is not None


def redefinitions(dag: LemmaDag, statement: str, blueprint: str = "") -> list[str]:
    """The definition nodes of ``dag`` that redefine the library declaration they name in
    ``library`` (their declaration in ``statement``, the scaffold, does not use it) and that the
    ``blueprint`` does not justify: one finding per node, naming both."""
    decls = declarations.scan(statement)
    out = []
    for node in dag.nodes:
        if node.kind == "theorem" or not node.library:
            continue
        d = declarations.find(decls, node.name)
        text = f"{d.header} {d.body}" if d is not None else ""
        if _mentions(text, node.library) or justified(blueprint, node.library):
            continue
        out.append(f"the definition `{node.name}` redefines `{node.library}`, which the library has: use "
                   f"`{node.library}` in it (or instead of it), or justify the new definition in the blueprint with a "
                   f"line `Redefines `{node.library}`: <why the document's notion differs>`")
    return out
