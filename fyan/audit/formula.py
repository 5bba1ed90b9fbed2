"""Formula trees for the semantic audit.

Both sides of an audit — the document's statement (source) and the Lean statement (candidate)
— are represented by the same tree. Its nodes are

* ``true`` / ``false`` (⊤ / ⊥), ``and`` / ``or`` (two or more arguments), ``implies`` (two),
  ``not`` (one), ``iff`` (two);
* ``forall`` / ``exists`` with a bound variable ``var``, a binder ``domain`` (a type, a
  subtype, a structure such as ``Group G`` for an instance binder, or ``_`` when the binder
  gives none) and one argument, the body;
* leaves: ``atom`` (a formula with no logical structure left, in ``text``) and ``def`` (a use of
  a definition ``name``; ``text`` is the whole application, e.g. ``Divides a n``).

On the source side every binder, atom and definition use carries ``quote``: a literal
quotation of ``problem.tex`` (checked by code, ``fyan.audit.source``).

Code — never a model — assigns node ids (``annotate``: pre-order, ``<prefix><n>``) and computes
for every node its **polarity** and **scope**:

* polarity is ``positive`` at the root; ``and``/``or`` keep it; ``implies`` flips it on the
  left; ``not`` flips it; both sides of ``iff`` are ``mixed``; a ``forall`` binder's domain is
  at the flipped polarity (restricting the domain is assuming more), an ``exists`` binder's
  domain at the same polarity (restricting the witness is claiming more); ``mixed`` never
  changes. Positive means: making the item stronger makes the whole statement stronger.
* scope is the list of binders and premises (ids of object nodes and of the leaves of
  premises) available at the node: a binder scopes over its body, the left side of an
  implication over its right side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Op = Literal["true", "false", "and", "or", "implies", "not", "iff", "forall", "exists", "atom", "def"]
Polarity = Literal["positive", "negative", "mixed"]
BinderKind = Literal["explicit", "implicit", "strict_implicit", "instance"]

LEAF_OPS = ("atom", "def", "true", "false")
BINDER_OPS = ("forall", "exists")
SYMBOL = {"true": "⊤", "false": "⊥", "and": "∧", "or": "∨", "implies": "→", "not": "¬", "iff": "↔",
          "forall": "∀", "exists": "∃"}


class Node(BaseModel):
    """One node of a formula tree (see the module docstring for the vocabulary)."""

    model_config = ConfigDict(extra="forbid")

    op: Op
    args: list[Node] = Field(default_factory=list)
    var: str | None = Field(default=None, description="forall/exists: the bound variable")
    domain: str | None = Field(default=None, description="forall/exists: the binder's domain ('_' if none is given)")
    binder: BinderKind = Field(default="explicit", description="forall/exists: how Lean binds it")
    text: str = Field(default="", description="atom/def: the formula or application")
    name: str | None = Field(default=None, description="def: the definition used")
    quote: str | None = Field(default=None, description="source side: literal quotation of problem.tex")
    id: str = Field(default="", description="assigned by code (annotate); ignored when a model sends it")

    @model_validator(mode="after")
    def _arity(self) -> Node:
        n = len(self.args)
        want = {"true": (0, 0), "false": (0, 0), "atom": (0, 0), "def": (0, 0), "not": (1, 1),
                "implies": (2, 2), "iff": (2, 2), "and": (2, 99), "or": (2, 99), "forall": (1, 1), "exists": (1, 1)}
        lo, hi = want[self.op]
        if not lo <= n <= hi:
            raise ValueError(f"{self.op} takes {lo if lo == hi else f'{lo} or more'} argument(s), got {n}")
        if self.op in BINDER_OPS and not (self.var and self.var.strip()):
            raise ValueError(f"{self.op} needs its bound variable in 'var'")
        if self.op in ("atom", "def") and not self.text.strip():
            raise ValueError(f"{self.op} needs its formula in 'text'")
        if self.op == "def" and not (self.name and self.name.strip()):
            raise ValueError("def needs the definition's name in 'name'")
        return self

    # -- traversal -----------------------------------------------------------------------
    def walk(self):
        """Pre-order iteration over the tree."""
        yield self
        for a in self.args:
            yield from a.walk()

    @property
    def is_leaf(self) -> bool:
        return self.op in LEAF_OPS

    def render(self) -> str:
        """One-line text of the formula (for prompts, tables and errors)."""
        if self.op in ("atom", "def"):
            return self.text
        if self.op in ("true", "false"):
            return SYMBOL[self.op]
        if self.op in BINDER_OPS:
            dom = "" if self.domain in (None, "", "_") else f" : {self.domain}"
            head = f"[{self.domain}]" if self.binder == "instance" else f"{self.var}{dom}"
            return f"{SYMBOL[self.op]} {head}, {self.args[0].render()}"
        if self.op == "not":
            return f"¬({self.args[0].render()})"
        return f" {SYMBOL[self.op]} ".join(f"({a.render()})" if not a.is_leaf else a.render() for a in self.args)


Node.model_rebuild()


def flip(p: Polarity) -> Polarity:
    return {"positive": "negative", "negative": "positive", "mixed": "mixed"}[p]  # type: ignore[return-value]


def join(ps: list[Polarity]) -> Polarity:
    """The polarity of a group of items: their common polarity, else ``mixed``."""
    s = set(ps)
    return ps[0] if len(s) == 1 else "mixed"


@dataclass
class NodeInfo:
    """What code computed for one node."""

    node: Node
    polarity: Polarity  # of the item: for a binder, of its domain
    position: Polarity  # of the formula at this node (for a binder: of the quantified formula)
    scope: list[str]
    parent: Node | None
    in_premise: bool  # under the left side of some implication
    depth: int
    bound: list[str] = field(default_factory=list)  # variables bound above the node


def annotate(tree: Node, prefix: str) -> dict[str, NodeInfo]:
    """Assign ids (``<prefix>1``, ``<prefix>2``, ... in pre-order) and compute polarity and
    scope of every node. Returns the information by id (insertion order = pre-order)."""
    info: dict[str, NodeInfo] = {}
    counter = [0]

    def premise_ids(n: Node) -> list[str]:
        return [m.id for m in n.walk() if m.is_leaf]

    def go(n: Node, pol: Polarity, scope: list[str], parent: Node | None, in_premise: bool, depth: int,
           bound: list[str]) -> None:
        counter[0] += 1
        n.id = f"{prefix}{counter[0]}"
        if n.op in BINDER_OPS:
            dom_pol = flip(pol) if n.op == "forall" else pol
            info[n.id] = NodeInfo(n, dom_pol, pol, list(scope), parent, in_premise, depth, list(bound))
            go(n.args[0], pol, scope + [n.id], n, in_premise, depth + 1, bound + [n.var or "_"])
            return
        info[n.id] = NodeInfo(n, pol, pol, list(scope), parent, in_premise, depth, list(bound))
        if n.op in ("and", "or"):
            for a in n.args:
                go(a, pol, scope, n, in_premise, depth + 1, bound)
        elif n.op == "not":
            go(n.args[0], flip(pol), scope, n, in_premise, depth + 1, bound)
        elif n.op == "implies":
            left, right = n.args
            go(left, flip(pol), scope, n, True, depth + 1, bound)
            go(right, pol, scope + premise_ids(left), n, in_premise, depth + 1, bound)
        elif n.op == "iff":
            for a in n.args:
                go(a, "mixed", scope, n, in_premise, depth + 1, bound)

    go(tree, "positive", [], None, False, 0, [])
    return info


def conjunction(parts: list[Node]) -> Node:
    """``parts`` joined by ``and``, nested conjunctions flattened (a single part is returned as
    it is; none is ⊤)."""
    flat: list[Node] = []
    for p in parts:
        flat.extend(p.args if p.op == "and" else [p])
    if not flat:
        return Node(op="true")
    return flat[0] if len(flat) == 1 else Node(op="and", args=flat)


# -- text comparison -------------------------------------------------------------------------

_IDENT = re.compile(r"[^\W\d][\w'!?₀-₉ₐ-ₜ]*(?:\.[^\W\d][\w'!?₀-₉ₐ-ₜ]*)*")

#: Spellings of the same thing, mapped to one (used before comparing texts).
SYNONYMS = {
    "Int": "ℤ", "Nat": "ℕ", "Rat": "ℚ", "Real": "ℝ", "Complex": "ℂ", "True": "⊤", "False": "⊥",
    "fun": "λ", "->": "→", "<=": "≤", ">=": "≥", "!=": "≠", "=>": "↦", "<->": "↔", "\\in": "∈",
}
_SYMBOL_SYNONYMS = sorted((k for k in SYNONYMS if not k[0].isalpha()), key=len, reverse=True)


def identifiers(text: str) -> list[str]:
    """The identifier tokens of ``text`` (dotted names kept whole)."""
    return _IDENT.findall(text)


def canonical(text: str, rename: dict[str, str] | None = None) -> str:
    """``text`` with bound variables renamed (``rename``; the first component of a dotted name
    too, so ``p.Prime`` follows ``p``), spelling synonyms unified (``Int``/``ℤ``, ``->``/``→``,
    ...), whitespace and redundant outer parentheses removed. Two items whose canonical texts
    are equal are the same item up to bound-variable renaming and spelling."""
    rename = rename or {}
    for sym in _SYMBOL_SYNONYMS:
        text = text.replace(sym, SYNONYMS[sym])

    def sub(m: re.Match) -> str:
        tok = m.group(0)
        head, dot, rest = tok.partition(".")
        if tok in rename:
            return rename[tok]
        if head in rename and dot:
            return rename[head] + "." + rest
        return SYNONYMS.get(tok, tok)

    out = _IDENT.sub(sub, text)
    out = "".join(out.split())
    while out.startswith("(") and out.endswith(")") and _balanced(out[1:-1]):
        out = out[1:-1]
    return out


def _balanced(s: str) -> bool:
    depth = 0
    for c in s:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


_RELATIONS = "≤≥<>=≠↔∣∈∉⊆"


def relation_normal(text: str) -> str:
    """``text`` (canonical) with the redundant parentheses around a whole side of its one
    top-level relation removed (``0<(n+1)`` is ``0<n+1``: arithmetic binds tighter than a
    relation), as left by substituting a term for a variable."""
    depth, hits = 0, []
    for i, ch in enumerate(text):
        if ch in "([{⟨":
            depth += 1
        elif ch in ")]}⟩":
            depth -= 1
        elif depth == 0 and ch in _RELATIONS and not (ch == "=" and i and text[i - 1] in ":≤≥≠!<>"):
            hits.append(i)
    if len(hits) != 1:
        return text
    i = hits[0]
    sides = []
    for side in (text[:i], text[i + 1:]):
        while side.startswith("(") and side.endswith(")") and _balanced(side[1:-1]):
            side = side[1:-1]
        sides.append(side)
    return f"{sides[0]}{text[i]}{sides[1]}"
