"""Honest units pass the gate's policy on real Lean 4.35.0 (the core tier, tests/lean_core.py): a
``prelude`` module for each feature formalizers write is compiled by the real ``lean``, the
extension entries it wrote are read from its ``.olean`` (tests/olean_reader.py) and the policy is
applied as the gate applies it (``fyan.lean.policy.extension_findings``: the policy by effect, no
allow-list). Each module must also write the extension that makes it the feature it claims (so a
module that stopped exercising its feature fails), and the inspector double must write at least
what real Lean wrote (``tests/fakes/fake_inspector.py`` ``HONEST_EXTENSIONS``).

Covered here: ``noncomputable`` definitions, instances and sections, ``open Classical``, ``export``,
enumeration and tree inductives with ``deriving Inhabited``, mutual inductives, instance-argument
definitions, ``@[match_pattern]``, ``@[elab_as_elim]``, ``structure … extends``, ``where``,
``variable``/``section``, structural recursion, an instance on an own alias of a product.

What this tier cannot write (no ``Init``; each is compiled below and must fail as stated, so a
core tier that grows one gets its control): ``@[ext]`` (its attribute syntax is declared in Init,
``Invalid `[ext]` attribute syntax``), ``termination_by``/``decreasing_by`` (no tactic syntax is
builtin: ``decreasing_by`` takes a tactic sequence, the default ``decreasing_tactic`` is an Init
macro, and ``WellFounded.fix`` lives in Init), ``deriving DecidableEq`` (the handler targets Init's
``DecidableEq``), and a module declaring ``syntax`` (the command elaborates to a ``Lean.ParserDescr``
the compiled parser-compiler reads with Init's runtime layout). The shipped controls
``tests/cheats/learn/*.lean`` carry them to ``fyan selftest`` on users' machines, and the policy
refuses ``Lean.Parser.parserExtension`` by its row (tests/test_extension_registry.py)."""

from __future__ import annotations

import subprocess

import pytest

from fyan.lean import policy
from tests.fakes.fake_inspector import HONEST_EXTENSIONS
from tests.lean_prelude import HONEST_BASE
from tests.olean_reader import module_data

pytestmark = pytest.mark.lean_core

FEATURES = {
    "Noncomputable": ("""namespace Ctl
structure Reals where
  val : N
noncomputable def pick : Real := Real.zero
noncomputable instance instInhReals : Inhabited Reals := ⟨Classical.choice ⟨⟨N.zero⟩⟩⟩
noncomputable section
def pick2 : Real := pick
end
open Classical in
noncomputable def chosen : N := choice ⟨N.zero⟩
end Ctl
""", ["Lean.noncomputableExt", "Lean.Meta.instanceExtension"]),
    "Export": ("""namespace Ctl
def one : N := N.succ N.zero
end Ctl
namespace Api
export Ctl (one)
end Api
""", ["Lean.aliasExtension"]),
    "Inductives": ("""namespace Ctl
inductive Color where
  | red | green | blue
  deriving Inhabited
inductive Tree (α : Type) where
  | leaf : Tree α
  | node : Tree α → α → Tree α → Tree α
def Tree.size {α : Type} : Tree α → N
  | .leaf => N.zero
  | .node l _ _ => N.succ (Tree.size l)
mutual
inductive Even : N → Prop where
  | zero : Even N.zero
  | succ : Odd n → Even (N.succ n)
inductive Odd : N → Prop where
  | succ : Even n → Odd (N.succ n)
end
end Ctl
""", ["Lean.Meta.instanceExtension", "Lean.noConfusionExt", "Lean.Meta.Match.Extension.extension",
      "Lean.Elab.Structural.eqnInfoExt", "recExt"]),
    "InstanceArgs": ("""namespace Ctl
def twice {α : Type} [Add α] (x : α) : α := Add.add x x
structure Money where
  cents : N
instance instAddMoney : Add Money := ⟨fun a _ => a⟩
def four (m : Money) : Money := twice (twice m)
end Ctl
""", ["Lean.Compiler.LCNF.specExtension", "Lean.Meta.instanceExtension"]),
    "Attributes": ("""namespace Ctl
@[match_pattern] def two : N := N.succ (N.succ N.zero)
def isTwo : N → N
  | two => N.zero
  | _ => N.succ N.zero
@[elab_as_elim] theorem natRec {motive : N → Prop} (z : motive N.zero)
    (s : ∀ n, motive n → motive (N.succ n)) (n : N) : motive n :=
  N.rec z s n
end Ctl
""", ["Lean.matchPatternAttr", "Lean.Elab.Term.elabAsElim"]),
    "Structures": ("""namespace Ctl
structure Point where
  x : N
  y : N
structure Point3 extends Point where
  z : N
section
variable (n : N)
def double : N := helper n
where helper (k : N) : N := k
def add : N → N → N
  | a, N.zero => a
  | a, N.succ b => N.succ (add a b)
end
abbrev Pair := Prod Point N
instance instLEPair : LE Pair := ⟨fun _ _ => Eq N.zero N.zero⟩
end Ctl
""", ["Lean.projectionFnInfoExt", "_private.Lean.Structure.0.Lean.structureExt", "Lean.Elab.Structural.eqnInfoExt",
      "Lean.Meta.instanceExtension"]),
}


def compile_module(lean, folder, stem, text):
    (folder / f"{stem}.lean").write_text(text)
    proc = subprocess.run([str(lean), "-R", str(folder), "-o", str(folder / f"{stem}.olean"), "--json",
                           str(folder / f"{stem}.lean")], capture_output=True, text=True, timeout=120,
                          cwd=folder, env={"LEAN_PATH": str(folder), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return folder / f"{stem}.olean"


@pytest.fixture(scope="module")
def base(core_lean, tmp_path_factory):
    folder = tmp_path_factory.mktemp("honest")
    compile_module(core_lean, folder, "Base", HONEST_BASE)
    return folder


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_an_honest_feature_compiled_by_real_lean_passes_the_policy(core_lean, base, feature):
    text, written = FEATURES[feature]
    olean = compile_module(core_lean, base, feature, "prelude\nimport Base\n" + text)
    extensions = module_data(olean)["extensions"]
    missing = [n for n in written if n not in extensions]
    assert not missing, f"{feature} no longer exercises what it claims: {missing} not written ({sorted(extensions)})"
    assert policy.extension_findings(sorted(extensions.items())) == []
    double = {n for names in HONEST_EXTENSIONS.values() for n in names}
    assert set(extensions) <= double, f"real Lean writes extensions the double does not: {sorted(set(extensions) - double)}"


def test_a_foreign_reducibility_change_compiled_by_real_lean_is_refused(core_lean, base):
    olean = compile_module(core_lean, base, "Foreign", "prelude\nimport Base\nset_option allowUnsafeReducibility true in\n"
                                                       "attribute [irreducible] Eq.ndrec\n")
    extensions = module_data(olean)["extensions"]
    found = policy.extension_findings(sorted(extensions.items()))
    assert [f.split(" (")[0] for f in found] == ["reducibilityExtra"], found
    assert "effect: changes how later statements elaborate" in found[0] and "to do: " in found[0]


#: features a prelude module cannot carry on this tier, with the error real 4.35.0 gives
OUT_OF_REACH = {
    "Ext": ("namespace Ctl\n@[ext] structure P where\n  x : N\n  y : N\nend Ctl\n", "Invalid `[ext]` attribute syntax"),
    "Wf": ("namespace Ctl\ndef f : N → N\n  | N.zero => N.zero\n  | N.succ n => f n\ntermination_by n => n\n"
           "decreasing_by exact lcProof\nend Ctl\n", "unknown tactic"),
    "Deriving": ("inductive Color where\n  | red | green\n  deriving DecidableEq\n", "Unknown constant `DecidableEq`"),
    "Syntax": ('syntax "fyanfoo" : term\n', "Unknown constant `Lean.ParserDescr`"),
}


@pytest.mark.parametrize("feature", sorted(OUT_OF_REACH))
def test_what_a_prelude_module_cannot_carry_fails_for_the_stated_reason(core_lean, base, feature):
    text, error = OUT_OF_REACH[feature]
    path = base / f"Out{feature}.lean"
    path.write_text("prelude\nimport Base\n" + text)
    proc = subprocess.run([str(core_lean), "-R", str(base), "-o", str(base / f"Out{feature}.olean"), str(path)],
                          capture_output=True, text=True, timeout=120, cwd=base,
                          env={"LEAN_PATH": str(base), "PATH": "/usr/bin:/bin"})
    assert proc.returncode != 0 and error in proc.stdout + proc.stderr, proc.stdout + proc.stderr
