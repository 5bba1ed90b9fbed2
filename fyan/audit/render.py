"""Plain-text views of trees and slots, for prompts and for ``fyan audit``.

Prompts never show polarity: the judge states what changed; code decides whether that is
admissible where it occurs.
"""

from __future__ import annotations

from fyan.audit.formula import SYMBOL, Node
from fyan.audit.slots import SlotTable


def tree_outline(tree: Node, *, quotes: bool = True) -> str:
    """One line per node: id, indentation by depth, the node, and its quotation."""
    lines: list[str] = []

    def go(n: Node, depth: int) -> None:
        if n.op in ("forall", "exists"):
            dom = "" if n.domain in (None, "", "_") else f" : {n.domain}"
            head = f"{SYMBOL[n.op]} [{n.domain}]" if n.binder == "instance" else f"{SYMBOL[n.op]} {n.var}{dom}"
            if n.binder not in ("explicit", "instance"):
                head += f"  ({n.binder})"
        elif n.op == "def":
            head = f"{n.text}   (uses definition {n.name})"
        elif n.op == "atom":
            head = n.text
        else:
            head = SYMBOL[n.op]
        q = f"   «{n.quote}»" if quotes and n.quote else ""
        lines.append(f"{n.id:<5} {'  ' * depth}{head}{q}")
        for a in n.args:
            go(a, depth + 1)

    go(tree, 0)
    return "\n".join(lines)


def slot_lines(table: SlotTable, *, quotes: bool = True) -> str:
    """One line per slot: id, kind, text (and quotation on the source side)."""
    out = []
    for s in table.slots:
        q = f"   «{s.quote}»" if quotes and s.quote else ""
        binder = f" ({s.binder})" if s.kind == "object" and s.binder not in (None, "explicit") else ""
        out.append(f"{s.id:<5} {s.kind:<10} {s.text}{binder}{q}")
    return "\n".join(out)
