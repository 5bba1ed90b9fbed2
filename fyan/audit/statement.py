"""The candidate side of a unit's audit, read from its ``Statement.lean`` (or a bridge S0).

``lean_side`` finds the root declarations, strips every comment (candidate comments never
reach the judge, docs/design.md), parses the roots into one formula tree
(``fyan.audit.lean_tree``) and cuts its slots. It also decides which definitions are
*checked* — frozen in an upstream unit, or a root of this (definition) unit and therefore
audited now — and which unit-local definitions the roots use without freezing them (a finding,
``fyan.audit.slots``).

Errors: ``LeanParseError`` when a root's header cannot be read; ``KeyError`` naming a root
that the file does not declare.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fyan.audit.conversions import definitions_of
from fyan.audit.formula import Node, identifiers
from fyan.audit.lean_tree import Context, local_definitions, statement_tree
from fyan.audit.slots import SlotTable, cut_slots
from fyan.lean import declarations
from fyan.lean.declarations import DEFINITION_KINDS, Declaration


@dataclass
class LeanSide:
    text: str  # the roots as the judge sees them: comment-free, one declaration per line
    tree: Node
    slots: SlotTable
    root: str  # full name of the first root (the one the record names)
    decls: dict[str, Declaration]  # full name -> declaration, roots first
    checked_defs: frozenset[str]
    unfrozen_defs: frozenset[str]
    definitions: dict = field(default_factory=dict)  # upstream frozen definitions code can unfold


def judge_text(d: Declaration) -> str:
    """A declaration as the judge sees it: no comments, whitespace collapsed, no proof."""
    header = declarations.normalize(declarations.strip_comments(d.header))
    if d.kind in DEFINITION_KINDS:
        return f"{d.kind} {d.name} {header} := {declarations.normalize(declarations.strip_comments(d.body))}"
    return f"{d.kind} {d.name} {header}"


def upstream_definitions(signatures: list[str]) -> list[Declaration]:
    """Definitions among frozen upstream signatures (``def X (..) : Prop := ...``)."""
    out = []
    for sig in signatures:
        for d in declarations.scan(sig):
            if d.kind in DEFINITION_KINDS:
                out.append(d)
    return out


def lean_side(statement: str, namespace: str, roots: list[str], upstream_signatures: list[str] | None = None,
              prefix: str = "c") -> LeanSide:
    """The candidate side of the roots ``roots`` (names inside ``namespace``) of ``statement``."""
    decls = declarations.scan(statement)
    found: dict[str, Declaration] = {}
    for r in roots:
        d = declarations.find(decls, f"{namespace}.{r}" if namespace else r) or declarations.find(decls, r)
        if d is None:
            raise KeyError(f"{namespace}.{r}" if namespace else r)
        found[d.full_name or r] = d
    up = upstream_definitions(upstream_signatures or [])
    local = [d for d in decls if d.kind in DEFINITION_KINDS]
    names, props = local_definitions(local + up)
    root_defs = {n for d in found.values() if d.kind in DEFINITION_KINDS for n in (d.name, d.full_name)}
    checked = frozenset({n for d in up for n in (d.name, d.full_name)} | root_defs)
    used = {x for d in found.values() for x in identifiers(d.header + " " + (d.body if d.kind in DEFINITION_KINDS else ""))}
    unfrozen = frozenset(n for d in local for n in (d.name, d.full_name)
                         if n not in root_defs and (d.name in used or d.full_name in used))
    ctx = Context(defs=names, prop_defs=props)
    tree = statement_tree(list(found.values()), ctx)
    slots = cut_slots(tree, "candidate", prefix, unfrozen_defs=unfrozen)
    shown = list(found.values()) + [d for d in local if d.name in unfrozen and d.full_name not in found]
    return LeanSide(text="\n".join(judge_text(d) for d in shown), tree=tree, slots=slots, root=next(iter(found)),
                    decls=found, checked_defs=checked, unfrozen_defs=unfrozen, definitions=definitions_of(up))
