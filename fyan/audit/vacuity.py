"""Vacuous statements, decided by code (no model): claims that hold by themselves, premises that
cannot hold, definitions that say nothing.

A statement whose claim is ``n = n``, or whose hypotheses contradict each other, is proved
without touching the mathematics; freezing one in place of the document's statement would
certify nothing. On an annotated formula tree (``fyan.audit.formula.annotate``) code finds:

* **a claim that holds by itself** — a leaf at positive polarity outside every premise that is
  ``⊤``, a reflexive relation (``x = x``, ``a ≤ a``, ``a ≥ a``, ``P ↔ P``, ``a ∣ a``), or a
  copy of a hypothesis in its scope (``p → p``); an equivalence whose two sides are the same
  formula (``(∃ k, n = 2 * k) ↔ ∃ j, n = 2 * j``); a closed computation (``2 ^ 10 = 1024``) is a
  claim a document may make and is left alone;
* **a premise that cannot hold** — ``⊥``, an irreflexive relation of a term with itself
  (``x < x``, ``x ≠ x``), a closed numeral relation that is false, ``n < 0`` (or ``0 > n``) for
  ``n`` bound over ``ℕ``; after substituting the numeral equations among the premises
  (``n = 0`` turns ``0 < n`` into ``0 < 0``);
* **premises that contradict each other** — ``a < b`` with ``b < a``, ``b ≤ a`` or ``a = b``;
  ``a ≤ b`` with ``b < a``; ``a = b`` with ``a ≠ b`` (``>``/``≥`` read flipped, ``=`` and
  ``≠`` both ways);
* **a definition that says nothing** (``definition_problems``) — a Prop-valued body that is
  ``True``/``False`` or holds by itself, or a body that uses none of the explicit parameters.

The relations are read from the canonical text of a leaf (``fyan.audit.formula.canonical``): one
relation symbol at parenthesis depth 0. Everything else is left alone — a finding is a proof,
never a guess. The same cases are elaborated by the real core Lean in the suite
(``tests/test_audit_vacuity.py``).
"""

from __future__ import annotations

import ast
import operator

from fyan.audit.formula import _IDENT, BINDER_OPS, NodeInfo, _balanced, canonical, identifiers, relation_normal

_REL = ("≤", "≥", "≠", "<", ">", "=", "↔", "∣")
_FLIP = {">": "<", "≥": "≤"}
_NAT = ("ℕ", "Nat")


def relation(text: str) -> tuple[str, str, str] | None:
    """(lhs, op, rhs) of the canonical ``text`` when it is one relation at depth 0 (``>``/``≥``
    flipped to ``<``/``≤``), else None."""
    t = relation_normal(canonical(text))
    depth, hits = 0, []
    i = 0
    while i < len(t):
        ch = t[i]
        if ch in "([{⟨":
            depth += 1
        elif ch in ")]}⟩":
            depth -= 1
        elif depth == 0 and ch in "≤≥≠<>=↔∣":
            if ch == "=" and i and t[i - 1] in ":≤≥≠<>!":
                i += 1
                continue
            hits.append(i)
        i += 1
    if len(hits) != 1:
        return None
    k = hits[0]
    lhs, op, rhs = t[:k], t[k], t[k + 1:]
    if not lhs or not rhs or op not in _REL:
        return None
    lhs, rhs = _unwrap(lhs), _unwrap(rhs)
    if op in _FLIP:
        lhs, op, rhs = rhs, _FLIP[op], lhs
    return lhs, op, rhs


def _unwrap(side: str) -> str:
    while side.startswith("(") and side.endswith(")") and _balanced(side[1:-1]):
        side = side[1:-1]
    return side


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def numeral_value(text: str) -> int | None:
    """The value of ``text`` when it is an integer expression of numerals with ``+ - * ^``
    (small exponents only), else None."""
    t = text.replace("^", "**")
    if not t or any(c not in "0123456789+-*() " for c in t):
        return None
    try:
        tree = ast.parse(t, mode="eval").body
    except SyntaxError:
        return None

    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
            return _OPS[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow):
            b, e = ev(n.left), ev(n.right)
            if not 0 <= e <= 64:
                raise ValueError
            return b ** e
        raise ValueError

    try:
        return ev(tree)
    except (ValueError, RecursionError):
        return None


def _truth(rel: tuple[str, str, str], nat: set[str]) -> bool | None:
    """True/False when the relation's truth is decided by its form alone, else None."""
    lhs, op, rhs = rel
    if lhs == rhs:
        return op in ("=", "≤", "↔", "∣")
    a, b = numeral_value(lhs), numeral_value(rhs)
    if a is not None and b is not None:
        return {"=": a == b, "≠": a != b, "<": a < b, "≤": a <= b, "∣": (b % a == 0) if a else b == 0,
                "↔": None}.get(op)
    if op == "<" and rhs == "0" and lhs in nat:
        return False
    return None


def holds_by_itself(text: str, nat: frozenset[str] = frozenset()) -> bool:
    """Whether the leaf ``text`` is true by its form alone: ``⊤`` or a reflexive relation
    (``x = x``, ``a ≤ a``). A closed computation (``2 ^ 10 = 1024``) is not: a document may
    state one, and proving it is its content."""
    t = canonical(text)
    if t == "⊤":
        return True
    rel = relation(t)
    return rel is not None and rel[0] == rel[2] and _truth(rel, set(nat)) is True


def false_by_itself(text: str, nat: frozenset[str] = frozenset()) -> bool:
    """Whether the leaf ``text`` is false by its form alone (``⊥``, ``x < x``, ``n < 0`` on ℕ...)."""
    t = canonical(text)
    if t == "⊥":
        return True
    rel = relation(t)
    return rel is not None and _truth(rel, set(nat)) is False


def _contradict(a: tuple[str, str, str], b: tuple[str, str, str]) -> bool:
    (l1, o1, r1), (l2, o2, r2) = a, b
    same, swapped = (l1, r1) == (l2, r2), (l1, r1) == (r2, l2)
    if o1 == "<":
        return (swapped and o2 in ("<", "≤")) or ((same or swapped) and o2 == "=")
    if o1 == "≤":
        return swapped and o2 == "<"
    if o1 == "=":
        return (same or swapped) and o2 in ("≠", "<")
    if o1 == "≠":
        return (same or swapped) and o2 == "="
    return False


def _substitute(text: str, values: dict[str, str]) -> str:
    return _IDENT.sub(lambda m: values.get(m.group(0), m.group(0)), text)


def premise_conflicts(texts: list[str], nat: frozenset[str] = frozenset()) -> list[str]:
    """Why the premises ``texts`` (held together) cannot all hold: one false by itself, two that
    contradict each other, or one made false by a numeral equation among them."""
    out: list[str] = []
    rels = [(t, relation(t)) for t in texts]
    values = {}
    for t, r in rels:
        if r and r[1] == "=":
            for v, n in ((r[0], r[2]), (r[2], r[0])):
                if _IDENT.fullmatch(v) and numeral_value(n) is not None:
                    values[v] = n
    for t in texts:
        if false_by_itself(t, nat):
            out.append(f"the hypothesis `{t}` is false by itself")
    for i, (t1, r1) in enumerate(rels):
        for t2, r2 in rels[i + 1:]:
            if r1 and r2 and (_contradict(r1, r2) or _contradict(r2, r1)):
                out.append(f"the hypotheses `{t1}` and `{t2}` contradict each other")
    for t, r in rels:
        if not values or (r and r[1] == "=" and (r[0] in values or r[2] in values)):
            continue
        sub = _substitute(canonical(t), values)
        if sub != canonical(t) and false_by_itself(sub, nat):
            eqs = ", ".join(f"{v} = {n}" for v, n in values.items() if v in identifiers(canonical(t)))
            out.append(f"the hypothesis `{t}` is false where {eqs}")
    return out


def _nat_vars(ni: NodeInfo, info: dict[str, NodeInfo]) -> frozenset[str]:
    return frozenset(info[i].node.var or "" for i in ni.scope
                     if i in info and info[i].node.op in BINDER_OPS and canonical(info[i].node.domain or "") in _NAT)


def _premises(ni: NodeInfo, info: dict[str, NodeInfo]) -> list[NodeInfo]:
    return [info[i] for i in ni.scope if i in info and info[i].node.is_leaf]


def vacuity_findings(info: dict[str, NodeInfo]) -> dict[str, list[str]]:
    """Per node id of ``info`` (an annotated tree), why the leaf makes the statement vacuous
    (module docstring); leaves without a finding are absent."""
    out: dict[str, list[str]] = {}

    def add(nid: str, msg: str) -> None:
        if msg not in out.setdefault(nid, []):
            out[nid].append(msg)

    for nid, ni in info.items():
        n = ni.node
        if n.op == "iff" and not ni.in_premise and ni.position == "positive":
            from fyan.audit.conversions import shape

            if shape(n.args[0], {}) == shape(n.args[1], {}):
                for leaf in n.walk():
                    if leaf.is_leaf:
                        add(leaf.id, f"the claim `{n.render()}` is an equivalence of a statement with itself: "
                                     "the statement is vacuous")
        if not n.is_leaf:
            continue
        nat = _nat_vars(ni, info)
        text = {"true": "⊤", "false": "⊥"}.get(n.op, n.text)
        if n.op in ("true", "false") and ni.parent is not None and ni.parent.op == "iff":
            add(nid, f"one side of an equivalence is {text}: the other side is a constant, it says nothing")
        if not ni.in_premise and ni.polarity == "positive":
            if holds_by_itself(text, nat):
                add(nid, f"the claim `{text}` holds by itself (whatever the hypotheses): the statement is vacuous")
            for p in _premises(ni, info):
                if p.node.op in ("atom", "def") and canonical(p.node.text) == canonical(text):
                    add(nid, f"the claim `{text}` is one of its own hypotheses: the statement is vacuous")
            premises = [p for p in _premises(ni, info) if p.polarity == "negative"]
            texts = [{"true": "⊤", "false": "⊥"}.get(p.node.op, p.node.text) for p in premises]
            for why in premise_conflicts(texts, nat):
                for p, t in zip(premises, texts, strict=True):
                    if f"`{t}`" in why:
                        add(p.node.id, f"{why}: no case satisfies the hypotheses, the statement is vacuous")
    return out


def definition_problems(params: list[str], body: str, prop: bool) -> list[str]:
    """Why a definition with explicit parameters ``params`` and ``body`` (comments removed) says
    nothing: a Prop-valued (``prop``) body that is ``True``/``False`` or holds/fails by itself, or
    a body that uses none of the parameters."""
    out = []
    b = canonical(body)
    if prop and (b in ("⊤", "⊥") or holds_by_itself(b) or false_by_itself(b)):
        out.append(f"its body `{body}` is a constant proposition: it does not depend on its arguments")
    elif params and not set(params) & set(identifiers(body)):
        out.append(f"its body `{body}` uses none of its arguments {', '.join(params)}")
    return out


def vacuous_roots(statement: str, namespace: str, roots: list[str]) -> str | None:
    """Why a root of ``statement`` (a unit's ``Statement.lean``) is vacuous, or None: a theorem
    root with a finding of ``vacuity_findings``, a definition root with a
    ``definition_problems`` one. A root the audit cannot read is left to its own check."""
    from fyan.audit.formula import annotate
    from fyan.audit.lean_tree import LeanParseError, parse_header
    from fyan.audit.statement import lean_side
    from fyan.lean import declarations
    from fyan.lean.declarations import DEFINITION_KINDS

    decls = declarations.scan(statement)
    for r in roots:
        d = declarations.find(decls, f"{namespace}.{r}" if namespace else r) or declarations.find(decls, r)
        if d is None:
            continue
        try:
            if d.kind in DEFINITION_KINDS:
                binders, typ = parse_header(d.header)
                body = declarations.normalize(declarations.strip_comments(d.body or ""))
                if not body or body.startswith(("|", "where")):
                    continue
                params = [b.name for b in binders if b.kind == "explicit"]
                problems = definition_problems(params, body, typ == "Prop")
                if problems:
                    return f"root {r} is a vacuous definition: " + "; ".join(problems)
                continue
            side = lean_side(statement, namespace, [r])
        except (LeanParseError, KeyError):
            continue
        found = vacuity_findings(annotate(side.tree, "c"))
        if found:
            why = "; ".join(dict.fromkeys(m for ms in found.values() for m in ms))
            return f"root {r} is vacuous: {why}"
    return None
