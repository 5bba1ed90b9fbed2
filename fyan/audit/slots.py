"""Slots: the items an evidence record pairs, cut from a formula tree by code.

From an annotated tree (``fyan.audit.formula.annotate``) code cuts

* **object** slots — one per binder (``forall``/``exists`` node): the bound variable with its
  domain, including restrictions carried by the type (a subtype ``{x : ℝ // 0 < x}``), by an
  instance binder (``[Group G]``: an object slot of binder kind ``instance``) or by an implicit
  argument. Polarity: the domain's polarity (``annotate``);
* **hypothesis** slots — the leaves (atoms, definition uses, ⊤/⊥) under the left side of an
  implication: after cutting, each conjunct of a premise is its own slot;
* **goal** slots — every other leaf: each conjunct (or disjunct) of a claim;
* **definition** slots — one per definition used (``def`` leaves with the same name), with the
  polarity of its uses joined (used both ways → ``mixed``).

Each slot carries its polarity, its scope (the object and hypothesis slots available where it
occurs) and what an omission means: a leaf that is a disjunct is replaced by ⊥, any other leaf
(a conjunct) and any instance binder by ⊤; an ordinary object has no replacement (an object
cannot be dropped).

Code findings (candidate side) force a grade of 0 for any row that contains the slot:

* a variable bound inside an atom (``∑ i in s, …``, ``fun x ↦ …``) that occurs where it is not
  bound — the index escapes its binder;
* a claim that is also assumed as a hypothesis in its own scope;
* a unit-local definition that is used but not frozen with the statement (its body could
  change after the audit);
* a vacuous statement (``fyan.audit.vacuity``): a claim that holds by itself, a hypothesis that
  cannot hold or hypotheses that contradict each other, a definition equivalent to ⊤/⊥.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from fyan.audit.formula import BINDER_OPS, Node, NodeInfo, Polarity, annotate, canonical, identifiers, join
from fyan.audit.lean_tree import bound_in_atoms, escaped_variables
from fyan.audit.vacuity import vacuity_findings

SlotKind = Literal["object", "hypothesis", "goal", "definition"]
Side = Literal["source", "candidate"]


class Slot(BaseModel):
    id: str
    side: Side
    kind: SlotKind
    text: str = Field(description="object: `x : T` or `[C]`; leaf: the formula; definition: its name")
    var: str | None = None
    domain: str | None = None
    binder: str | None = None
    quantifier: Literal["forall", "exists"] | None = None
    quote: str | None = None
    polarity: Polarity
    position: Polarity | None = Field(default=None, description="object: polarity of the quantified formula itself")
    scope: list[str] = Field(default_factory=list)
    replacement: Literal["⊤", "⊥"] | None = None
    literal: Literal["⊤", "⊥"] | None = Field(default=None, description="the leaf is ⊤ or ⊥ itself")
    node: str | None = Field(default=None, description="node id (None for a definition slot)")
    occurrences: list[str] = Field(default_factory=list, description="definition: ids of its uses")
    findings: list[str] = Field(default_factory=list)

    def label(self) -> str:
        return f"{self.id} {self.kind} `{self.text}`"


class SlotTable(BaseModel):
    """The slots of one side, with the annotated tree they were cut from."""

    side: Side
    prefix: str
    tree: Node
    slots: list[Slot]

    def get(self, slot_id: str) -> Slot | None:
        return next((s for s in self.slots if s.id == slot_id), None)

    @property
    def ids(self) -> list[str]:
        return [s.id for s in self.slots]

    def node(self, node_id: str) -> Node | None:
        return next((n for n in self.tree.walk() if n.id == node_id), None)

    def info(self) -> dict[str, NodeInfo]:
        """Polarity and scope of every node (recomputed: ids are stable for a given tree)."""
        return annotate(self.tree, self.prefix)


def object_text(n: Node) -> str:
    if n.binder == "instance":
        return f"[{n.domain}]"
    dom = "" if n.domain in (None, "", "_") else f" : {n.domain}"
    return f"{n.var}{dom}"


def cut_slots(tree: Node, side: Side, prefix: str, *, unfrozen_defs: frozenset[str] = frozenset()) -> SlotTable:
    """Annotate ``tree`` (ids ``<prefix>1``...) and cut its slots (module docstring).

    ``unfrozen_defs`` names unit-local definitions that are not frozen with the statement
    (candidate side): their definition slots get a finding.
    """
    info = annotate(tree, prefix)
    slots: list[Slot] = []
    defs: dict[str, list[str]] = {}
    for nid, ni in info.items():
        n = ni.node
        if n.op in BINDER_OPS:
            slots.append(Slot(
                id=nid, side=side, kind="object", text=object_text(n), var=n.var, domain=n.domain, binder=n.binder,
                quantifier=n.op, quote=n.quote, polarity=ni.polarity, position=ni.position, scope=ni.scope, node=nid,
                replacement="⊤" if n.binder == "instance" else None,
            ))
        elif n.is_leaf:
            parent_or = ni.parent is not None and ni.parent.op == "or"
            literal = {"true": "⊤", "false": "⊥"}.get(n.op)
            slots.append(Slot(
                id=nid, side=side, kind="hypothesis" if ni.in_premise else "goal",
                text=n.text if n.op in ("atom", "def") else literal or "", quote=n.quote, polarity=ni.polarity,
                scope=ni.scope, replacement="⊥" if parent_or else "⊤", literal=literal, node=nid,
            ))
            if n.op == "def" and n.name:
                defs.setdefault(n.name, []).append(nid)
    for k, (name, occ) in enumerate(defs.items(), start=1):
        pol = join([info[o].polarity for o in occ])
        slot = Slot(id=f"{prefix}d{k}", side=side, kind="definition", text=name, polarity=pol, occurrences=occ,
                    quote=next((info[o].node.quote for o in occ if info[o].node.quote), None))
        if name in unfrozen_defs or name.split(".")[-1] in unfrozen_defs:
            slot.findings.append(
                f"definition `{name}` is declared in this unit's scaffold but is not a completion root: its body is "
                "not frozen with the statement and could change after the audit (make it a root of a definition "
                "unit, or state the condition directly)")
        slots.append(slot)
    table = SlotTable(side=side, prefix=prefix, tree=tree, slots=slots)
    if side == "candidate":
        _findings(table, info)
    return table


def _findings(table: SlotTable, info: dict[str, NodeInfo]) -> None:
    leaves = [s for s in table.slots if s.kind in ("hypothesis", "goal") and s.literal is None]
    bound_anywhere = bound_in_atoms(table.tree)
    for s in leaves:
        ni = info[s.node or ""]
        scope_vars = set(ni.bound)
        inner = bound_in_atoms(ni.node)
        escaped = set(escaped_variables(s.text, scope_vars))
        escaped |= {x for x in identifiers(s.text) if x in bound_anywhere and x not in inner and x not in scope_vars}
        for x in sorted(escaped):
            s.findings.append(f"variable `{x}` occurs outside the binder that binds it (it escapes its binder and is free here)")
    vacuous = vacuity_findings(info)
    for s in table.slots:
        if s.kind in ("hypothesis", "goal"):
            s.findings.extend(f for f in vacuous.get(s.node or "", []) if f not in s.findings)
    by_text: dict[str, list[Slot]] = {}
    for s in leaves:
        if s.kind == "hypothesis":
            by_text.setdefault(canonical(s.text), []).append(s)
    for g in leaves:
        if g.kind != "goal":
            continue
        for h in by_text.get(canonical(g.text), []):
            if h.id in g.scope:
                g.findings.append(f"the claim `{g.text}` is assumed as hypothesis {h.id}")
                h.findings.append(f"hypothesis `{h.text}` assumes the claim {g.id}")
