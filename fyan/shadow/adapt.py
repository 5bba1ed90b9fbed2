"""Name adaptation: map the reference's names (target, auxiliaries) to a candidate's.

Checkers name the reference's declarations. A candidate may call them otherwise, so before a
checker is appended to a candidate file its names are rewritten (``rename``) by a mapping
computed with these rules, tried in order:

1. ``exact`` — the same full name;
2. ``namespace-stripped`` — the same last component (``MiniF2F.foo`` for ``foo``);
3. ``case-folded`` — the same last component up to case (``Foo`` for ``foo``);
4. ``unique-of-kind`` — the only remaining declaration of the same kind (definitions with
   definitions, structures with structures, ...).

The target always maps to the candidate (the submission's last theorem block, ``extract``); its
``rule`` records how the names relate, with ``last-theorem-block`` when none of 1–3 applies.
An auxiliary that no rule resolves (or that two declarations match equally) is ``unresolved``.
Only then may a model draft an adapter (``fyan.agents.shadow_adapter``): its declarations are recorded
verbatim in the report with ``method = "model-drafted adapter"`` and counted apart in summaries;
the gate never uses one (deterministic checks never call a model).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from fyan.lean import declarations
from fyan.lean.declarations import Declaration
from fyan.shadow.extract import Candidate
from fyan.shadow.shadowset import ShadowSet

Rule = Literal["exact", "namespace-stripped", "case-folded", "unique-of-kind", "last-theorem-block",
               "model-drafted adapter"]

_KIND_GROUP = {"def": "definition", "abbrev": "definition", "opaque": "definition", "theorem": "theorem"}
_ID_CHARS = r"\w'!?₀-₉ₐ-ₜ"


class NameMatch(BaseModel):
    reference: str
    candidate: str | None = None
    rule: Rule | None = None
    problem: str | None = Field(default=None, description="Why the name is unresolved")


class Adaptation(BaseModel):
    """How the reference's names were mapped to the candidate's."""

    method: Literal["rules", "model-drafted adapter"] = "rules"
    target: NameMatch
    auxiliary: list[NameMatch] = Field(default_factory=list)
    adapter: str | None = Field(default=None, description="Lean declarations drafted by a model (fallback only)")
    adapter_model: str | None = None

    @property
    def unresolved(self) -> list[NameMatch]:
        return [m for m in self.auxiliary if m.candidate is None]

    @property
    def mapping(self) -> dict[str, str]:
        """Reference name → candidate name, for every resolved name that differs."""
        pairs = [self.target, *self.auxiliary]
        return {m.reference: m.candidate for m in pairs if m.candidate and m.candidate != m.reference}


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _group(kind: str) -> str:
    return _KIND_GROUP.get(kind, kind)


def name_rule(reference: str, candidate: str) -> Rule | None:
    """The first of rules 1–3 relating two names, or None."""
    if reference == candidate:
        return "exact"
    if _last(reference) == _last(candidate):
        return "namespace-stripped"
    if _last(reference).casefold() == _last(candidate).casefold():
        return "case-folded"
    return None


def _match_auxiliary(ref: Declaration, pool: list[Declaration], taken: set[str]) -> NameMatch:
    free = [d for d in pool if d.full_name and d.full_name not in taken]
    for rule in ("exact", "namespace-stripped", "case-folded"):
        hits = [d for d in free if name_rule(ref.full_name, d.full_name) == rule]
        if len(hits) == 1:
            return NameMatch(reference=ref.full_name, candidate=hits[0].full_name, rule=rule)
        if len(hits) > 1:
            return NameMatch(reference=ref.full_name, problem=f"{rule} match is ambiguous: "
                             + ", ".join(d.full_name for d in hits))
    same_kind = [d for d in free if _group(d.kind) == _group(ref.kind)]
    if len(same_kind) == 1:
        return NameMatch(reference=ref.full_name, candidate=same_kind[0].full_name, rule="unique-of-kind")
    if not same_kind:
        return NameMatch(reference=ref.full_name, problem=f"no {ref.kind} in the submission matches")
    return NameMatch(reference=ref.full_name, problem=f"{len(same_kind)} declarations of kind {ref.kind} and none "
                     "with a matching name: " + ", ".join(d.full_name for d in same_kind))


def adapt(shadow_set: ShadowSet, candidate: Candidate) -> Adaptation:
    """The rule-based mapping of ``shadow_set``'s names to ``candidate``'s (module docstring)."""
    target = NameMatch(reference=shadow_set.target, candidate=candidate.name,
                       rule=name_rule(shadow_set.target, candidate.name) or "last-theorem-block")
    ref_decls = declarations.scan(shadow_set.reference)
    pool = [d for d in candidate.helpers if d.kind != "example"]
    taken = {candidate.name}
    # exact and near-exact names first, so a unique-of-kind guess never steals a named match
    ordered = sorted(shadow_set.auxiliary, key=lambda a: 0 if any(name_rule(a, d.full_name) for d in pool) else 1)
    found: dict[str, NameMatch] = {}
    for name in ordered:
        ref = declarations.find(ref_decls, name)
        assert ref is not None  # validated by ShadowSet
        match = _match_auxiliary(ref, pool, taken)
        if match.candidate:
            taken.add(match.candidate)
        found[name] = match
    aux = [found[name] for name in shadow_set.auxiliary]
    return Adaptation(target=target, auxiliary=aux)


def rename(text: str, mapping: dict[str, str]) -> str:
    """``text`` with every whole-identifier occurrence of a key of ``mapping`` replaced by its
    value, in one pass (a key preceded by ``.`` is part of a longer name and kept; a following
    ``.field`` is kept as written)."""
    if not mapping:
        return text
    keys = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(r"(?<![" + _ID_CHARS + r".])(" + "|".join(re.escape(k) for k in keys) + r")(?![" + _ID_CHARS + r"])")
    return pattern.sub(lambda m: mapping[m.group(1)], text)
