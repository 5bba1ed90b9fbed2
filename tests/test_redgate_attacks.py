"""Attacks on the axiom audit's names: an axiom a candidate declares under a name that only looks
like an allow-listed one (the allow-listed name spelled in the unit's own namespace, as a private
declaration, with a `_root_` spelling left in, a per-proof native axiom) must be refused, and the
core axioms Lean itself reports (``propext``, ``Classical.choice``, ``Quot.sound``) must pass.

The names are the full names the trusted inspector reports (docs/lean-contract.md, "Transitive
axioms": ``CollectAxioms`` returns the axioms' full names, a ``private`` declaration's name carries
the ``_private.<Module>.0.`` prefix); the decision is ``fyan.lean.policy.classify_axioms``, the
function ``check_axiom_audit`` applies to every declaration of the unit's module.
"""

from __future__ import annotations

import pytest

from fyan.lean.policy import classify_axioms

DEFAULT_ALLOW = ["propext", "Classical.choice", "Quot.sound"]

LOOK_ALIKES = [
    "Cheats.ThmRoot.Classical.choice",          # `namespace Cheats.ThmRoot` … `axiom Classical.choice : False`
    "Cheats.ThmRoot.propext",
    "_private.Cheats.ThmRoot.0.Quot.sound",     # `private axiom Quot.sound : False`
    "_private.Cheats.ThmRoot.0.sorryAx",
    "Classical.choice'",
    "Classical.choice._root_",
    "Cheats.ThmRoot.double_even._native.native_decide.ax_1_1",
    "_native.native_decide.ax_1",
]


@pytest.mark.parametrize("name", LOOK_ALIKES)
def test_a_look_alike_of_an_allowlisted_axiom_is_refused(name: str) -> None:
    rejected = classify_axioms([name], DEFAULT_ALLOW)
    assert len(rejected) == 1 and rejected[0].startswith(name + " ("), rejected


def test_a_look_alike_is_refused_beside_the_real_core_axioms() -> None:
    rejected = classify_axioms(["propext", "Classical.choice", "Cheats.ThmRoot.Classical.choice", "Quot.sound"],
                               DEFAULT_ALLOW)
    assert rejected == ["Cheats.ThmRoot.Classical.choice (user axiom, not in the allow-list)"]


def test_honest_control_core_axioms_pass() -> None:
    assert classify_axioms(["propext", "Classical.choice", "Quot.sound"], DEFAULT_ALLOW) == []


@pytest.mark.parametrize("name", ["sorryAx", "Lean.ofReduceBool", "Lean.trustCompiler", "Lean.ofReduceNat"])
def test_an_allow_list_naming_a_refused_axiom_does_not_admit_it(name: str) -> None:
    rejected = classify_axioms([name], [*DEFAULT_ALLOW, name])
    assert rejected and "rejected by name" in rejected[0]
