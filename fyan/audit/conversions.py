"""The conversions of a ``trivial_equivalent`` row that change a row's shape, applied by code.

A row may claim that its source and candidate items agree once a conversion is applied. The
claim is never taken on trust: code applies the conversion and the texts must then agree
exactly (``fyan.audit.validator.conversion_problem`` compares what is left).

* ``one_point_rule``: an object ``v`` of the row with a defining equation ``v = t`` (or
  ``t = v``, ``v`` not free in ``t``) in the row — a premise of ``v``'s ``∀`` body, or a
  conjunct of its ``∃`` body — is removed together with its equation, and ``t`` is substituted
  for ``v`` in the row's other items (``∀ v, v = t → P v`` is ``P t``; ``∃ v, v = t ∧ P v`` is
  ``P t``). Every item that mentions ``v`` must be in the row and under the equation.
* ``decidability_instance``: an instance binder ``[Decidable …]`` (``DecidableEq``,
  ``DecidablePred``, …) of the row is removed; classical logic provides every such instance, so
  the statement does not change, provided nothing else of the statement names the instance.
* ``definition_unfolding``: every use ``D a₁ … aₙ`` of a definition ``D`` named in ``unfolds``
  is replaced by ``D``'s body with its explicit parameters instantiated, on both sides of the
  row; the row's items must form one subformula on each side (``row_formula``), and the two
  subformulas must then have the same formula tree up to renaming bound variables
  (``shape``). ``D`` must be an upstream frozen definition whose body code knows
  (``Definition``), and it must occur in the row.

Errors are returned as text (why the conversion does not apply), never raised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fyan.audit.formula import _IDENT, BINDER_OPS, Node, _balanced, canonical, identifiers, relation_normal
from fyan.audit.slots import Slot, SlotTable


@dataclass(frozen=True)
class Definition:
    """A definition code can unfold: ``name`` (short), its explicit parameters in order and its
    body as written (comments removed)."""

    name: str
    params: tuple[str, ...]
    body: str


def definitions_of(decls) -> dict[str, Definition]:
    """``Definition``s of the Prop- or term-valued ``def``/``abbrev`` declarations among
    ``decls`` (``fyan.lean.declarations.Declaration``), keyed by short and full name.
    A declaration whose header cannot be read, or whose body is by cases (``|``/``where``), is
    left out: code cannot unfold it."""
    from fyan.audit.lean_tree import LeanParseError, parse_header
    from fyan.lean.declarations import normalize, strip_comments

    out: dict[str, Definition] = {}
    for d in decls:
        if d.kind not in ("def", "abbrev") or not d.name:
            continue
        try:
            binders, _ = parse_header(d.header)
        except LeanParseError:
            continue
        body = normalize(strip_comments(d.body or ""))
        if not body or body.startswith(("|", "where")) or any(b.kind == "explicit" and b.name == "_" for b in binders):
            continue
        df = Definition(d.name, tuple(b.name for b in binders if b.kind == "explicit"), body)
        out[d.name] = df
        if d.full_name:
            out[d.full_name] = df
    return out


_OPEN = {"(": ")", "[": "]", "{": "}", "⟨": "⟩"}
_ATOM = re.compile(r"[^\W][\w'!?₀-₉ₐ-ₜ.]*|\d+")


def _argument(text: str, i: int) -> tuple[str, int] | None:
    """One application argument of ``text`` starting at ``i`` (after spaces): a bracketed group
    or a name/numeral; (argument, end) or None."""
    while i < len(text) and text[i] == " ":
        i += 1
    if i >= len(text):
        return None
    if text[i] in _OPEN:
        depth, j = 0, i
        while j < len(text):
            if text[j] in _OPEN:
                depth += 1
            elif text[j] in _OPEN.values():
                depth -= 1
                if depth == 0:
                    return text[i:j + 1], j + 1
            j += 1
        return None
    m = _ATOM.match(text, i)
    if not m or m.group(0) in ("fun", "λ"):
        return None
    return m.group(0), m.end()


def unfold(text: str, defs: dict[str, Definition], names: set[str]) -> tuple[str | None, set[str]]:
    """``text`` with every use of the definitions ``names`` (short or full names, as keys of
    ``defs``) replaced by the definition's body, explicit parameters instantiated; and the set
    of names that occurred. None when a use is not applied to all its explicit parameters
    (code does not unfold a partial application)."""
    seen: set[str] = set()
    for _ in range(8):  # a body may use another unfolded definition
        out, pos, changed = [], 0, False
        for m in _IDENT.finditer(text):
            tok = m.group(0)
            if tok not in names or tok not in defs or (m.start() and text[m.start() - 1] in "._"):
                continue
            d = defs[tok]
            args, end = [], m.end()
            for _p in d.params:
                a = _argument(text, end)
                if a is None:
                    return None, seen | {tok}
                args.append(a[0])
                end = a[1]
            sub = dict(zip(d.params, args, strict=True))
            body = _IDENT.sub(lambda n: _wrap(sub[n.group(0)]) if n.group(0) in sub else n.group(0), d.body)
            out.append(text[pos:m.start()])
            out.append(f"({body})")
            pos, changed = end, True
            seen.add(tok)
        out.append(text[pos:])
        text = "".join(out)
        if not changed:
            break
    return text, seen


def row_formula(slots: list[Slot], table: SlotTable) -> Node | None:
    """The subformula of ``table``'s tree whose binders and leaves are exactly the row's
    (non-definition) slots, or None when the row's items are not one subformula."""
    ids = {s.node for s in slots if s.kind != "definition" and s.node}
    if not ids:
        return None
    parent: dict[str, Node] = {}
    nodes: dict[str, Node] = {}
    for n in table.tree.walk():
        nodes[n.id] = n
        for a in n.args:
            parent[a.id] = n

    def chain(i: str) -> list[str]:
        out = [i]
        while out[-1] in parent:
            out.append(parent[out[-1]].id)
        return out

    chains = [chain(i) for i in ids]
    common = set(chains[0]).intersection(*map(set, chains[1:]))
    lca = next(i for i in chains[0] if i in common)
    sub = nodes[lca]
    inside = {n.id for n in sub.walk() if n.op in BINDER_OPS or n.is_leaf}
    return sub if inside == ids else None


def shape(node: Node, free: dict[str, str], sort_conjuncts: bool = False) -> str:
    """A formula tree as text with bound variables numbered in binding order (so two trees
    that differ only in bound names agree), free names renamed by ``free`` and leaves in
    ``canonical`` spelling. Binder order, scope, connectives and polarity are all kept."""
    counter = [0]

    def go(n: Node, env: dict[str, str]) -> str:
        if n.op in BINDER_OPS:
            counter[0] += 1
            dom = canonical(n.domain or "_", env)
            inner = dict(env)
            if n.var:
                inner[n.var] = f"#{counter[0]}"
            head = "inst" if n.binder == "instance" else f"#{counter[0]}"
            return f"{'∀' if n.op == 'forall' else '∃'}{head}:{dom},{go(n.args[0], inner)}"
        if n.op == "true":
            return "⊤"
        if n.op == "false":
            return "⊥"
        if n.is_leaf:
            return relation_normal(canonical(n.text, env))
        parts = [go(a, env) for a in n.args]
        if n.op in ("and", "or") and sort_conjuncts:
            parts.sort()
        return f"{n.op}({';'.join(parts)})"

    return go(node, dict(free))


def unfolding_problem(srcs: list[Slot], cands: list[Slot], src: SlotTable, cand: SlotTable, rename: dict[str, str],
                      unfolds: list[str], defs: dict[str, Definition], reorder: bool = False) -> str | None:
    """None when unfolding ``unfolds`` on both sides makes the row's subformulas agree
    (module docstring); else why not."""
    from fyan.audit.lean_tree import Context, LeanParseError, parse_formula

    if not unfolds:
        return "definition_unfolding names no definition in `unfolds`"
    unknown = [u for u in unfolds if u not in defs]
    if unknown:
        return (f"definition_unfolding: code cannot unfold {', '.join(unknown)} (only a frozen upstream definition "
                "with a plain body is unfolded; a root of this unit is what the audit checks, not a conversion)")
    names = set(unfolds) | {defs[u].name for u in unfolds}
    names |= {k for k, d in defs.items() if d.name in names}
    trees = []
    seen: set[str] = set()
    for slots, table, free in ((srcs, src, rename), (cands, cand, {})):
        sub = row_formula(slots, table)
        if sub is None:
            return (f"definition_unfolding: the row's {table.side} items are not one subformula of the statement "
                    "(group a whole subformula, binders included)")
        text, occurred = unfold(sub.render(), defs, names)
        seen |= occurred
        if text is None:
            return f"definition_unfolding: {', '.join(sorted(occurred))} is not applied to all its arguments"
        try:
            tree = parse_formula(text, Context())
        except LeanParseError as e:
            return f"definition_unfolding: the unfolded {table.side} text cannot be read: {e}"
        trees.append((tree, free))
    missing = [u for u in unfolds if defs[u].name not in {defs[x].name for x in seen if x in defs}]
    if missing:
        return f"definition_unfolding: {', '.join(missing)} does not occur in the row"
    a, b = (shape(t, f, reorder) for t, f in trees)
    if a != b:
        return f"unfolding {', '.join(unfolds)} does not make the row's texts agree: {a} vs {b}"
    return None


def _equation(text: str, var: str) -> str | None:
    """``t`` when ``text`` is ``var = t`` or ``t = var`` with ``var`` not free in ``t``."""
    c = canonical(text)
    depth, hits = 0, []
    for i, ch in enumerate(c):
        if ch in "([{⟨":
            depth += 1
        elif ch in ")]}⟩":
            depth -= 1
        elif ch == "=" and depth == 0:
            hits.append(i)
    if len(hits) != 1:
        return None
    lhs, rhs = c[:hits[0]], c[hits[0] + 1:]
    if lhs.endswith(("≠", "≤", "≥", "<", ">", ":", "!")):
        return None
    for v, t in ((lhs, rhs), (rhs, lhs)):
        if v == var and var not in identifiers(t):
            return t
    return None


def _wrap(term: str) -> str:
    """``term`` as an argument: in parentheses unless it is one name or numeral already."""
    t = term.strip()
    return t if re.fullmatch(r"[\w.'!?₀-₉ₐ-ₜ]+", t) or (t[:1] == "(" and t[-1:] == ")" and _balanced(t[1:-1])) \
        else f"({t})"


def _substitute(text: str, var: str, term: str) -> str:
    return _IDENT.sub(lambda m: _wrap(term) if m.group(0) == var else m.group(0), text)


def _governs(o: Slot, h: Slot, table: SlotTable) -> bool:
    """Whether the equation ``h`` is a premise of ``o``'s ``∀`` body (``∀ o, … → h ∧ … → P``:
    from ``h`` up to ``o`` only conjunctions, then the left side of one implication, then
    right sides of implications and other ``∀`` binders) or a conjunct of its ``∃`` body (only
    conjunctions and other ``∃`` binders). Anything else (``h ∨ Q``, ``¬ h``, ``(h → Q) → P``)
    is not the one-point rule."""
    parent: dict[str, Node] = {}
    for n in table.tree.walk():
        for a in n.args:
            parent[a.id] = n
    cur = h.node or ""
    stage = "conjuncts"
    while cur in parent:
        p = parent[cur]
        if p.id == o.node:
            return (o.quantifier == "forall" and stage == "body") or (o.quantifier == "exists" and stage == "conjuncts")
        if p.op == "implies" and o.quantifier == "forall" and p.args[0].id == cur and stage == "conjuncts":
            stage = "body"
        elif not ((p.op == "and" and stage == "conjuncts")
                  or (p.op == "implies" and p.args[1].id == cur and stage == "body")
                  or (p.op == o.quantifier and p.binder != "instance")):
            return False
        cur = p.id
    return False


def apply_one_point(slots: list[Slot], table: SlotTable) -> tuple[list[Slot], int, str | None]:
    """The row's slots on one side with every object defined by an equation removed (with its
    equation) and its term substituted in the other slots; the number of objects removed; a
    problem when an object's equation is missing or the substitution would not be sound."""
    objs = [s for s in slots if s.kind == "object" and s.binder != "instance" and s.var]
    rest = list(slots)
    removed = 0
    for o in objs:
        found = None
        for h in rest:
            if h.kind not in ("hypothesis", "goal") or o.id not in h.scope:
                continue
            term = _equation(h.text, o.var or "")
            if term is None:
                continue
            if _governs(o, h, table):
                found = (h, term)
                break
        if found is None:
            continue
        h, term = found
        users = [s for s in table.slots if s.id not in (o.id, h.id) and o.var in identifiers(
            s.text if s.kind != "object" else (s.domain or ""))]
        outside = [s.id for s in users if s.id not in {x.id for x in rest}]
        if outside:
            return slots, 0, (f"one_point_rule: {', '.join(outside)} mention {o.var} but are not in the row "
                              f"(the substitution must reach every use)")
        unguarded = [s.id for s in users if s.kind != "object" and o.quantifier == "forall" and h.id not in s.scope]
        if unguarded:
            return slots, 0, f"one_point_rule: {', '.join(unguarded)} mention {o.var} outside the equation's scope"
        rest = [s if s.id not in {u.id for u in users} else s.model_copy(update={
            "text": _substitute(s.text, o.var, term),
            "domain": _substitute(s.domain, o.var, term) if s.domain else s.domain}) for s in rest
            if s.id not in (o.id, h.id)]
        removed += 1
    return rest, removed, None


def apply_decidability(slots: list[Slot], table: SlotTable) -> tuple[list[Slot], int, str | None]:
    """The row's slots on one side without its ``[Decidable…]`` instance binders; how many were
    removed; a problem when another item of the statement names a removed instance."""
    gone = [s for s in slots if s.kind == "object" and s.binder == "instance"
            and (s.domain or "").strip().startswith("Decidable")]
    for g in gone:
        if g.var and g.var not in ("_", "_inst") and any(
                g.var in identifiers(s.text) for s in table.slots if s.id != g.id and s.kind != "object"):
            return slots, 0, f"decidability_instance: the instance {g.var} is used elsewhere in the statement"
    return [s for s in slots if s not in gone], len(gone), None
