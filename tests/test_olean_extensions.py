"""Contract rows of docs/lean-contract.md checked on real Lean 4.35.0 (the core tier,
``pytest -m lean_core``): the environment extensions real Lean writes for honest modules are the
ones the inspector double writes (``tests/fakes/fake_inspector.py`` ``HONEST_EXTENSIONS``), and a
``module`` file hides its declarations at the exported level. What this tier cannot show: anything
importing ``Init``/``Lean`` (the inspector itself, tactics), which ``fyan selftest`` proves on users'
machines."""

from __future__ import annotations

import subprocess

import pytest

from tests.fakes.fake_inspector import HONEST_EXTENSIONS
from tests.olean_reader import load, module_data, name

pytestmark = pytest.mark.lean_core

PRELUDE = """prelude
unsafe axiom lcAny : Type
unsafe axiom lcErased : Type
axiom lcProof {α : Prop} : α
unsafe axiom lcUnreachable {α : Sort u} : α
inductive Eq {α : Sort u} (a : α) : α → Prop where
  | refl : Eq a a
"""

HONEST = PRELUDE + """/-! module doc -/
namespace Ctl
inductive N where
  | z : N
  | s : N → N
structure Pt where
  x : N
  y : N
class Inh (α : Type) where
  val : α
instance instInhN : Inh N := ⟨N.z⟩
abbrev M := N
@[simp] theorem foo : Eq N.z N.z := Eq.refl
theorem unusedArg (p : Pt) : Eq N.z N.z := Eq.refl
/-- doc -/
def dd : N := N.z
end Ctl
"""


def _compile(lean, folder, stem, text):
    (folder / f"{stem}.lean").write_text(text)
    proc = subprocess.run([str(lean), "-R", str(folder), "-o", str(folder / f"{stem}.olean"), "--json",
                           str(folder / f"{stem}.lean")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return folder / f"{stem}.olean"


def test_the_double_writes_the_extensions_real_lean_writes_for_honest_modules(core_lean, tmp_path):
    real = set(module_data(_compile(core_lean, tmp_path, "Honest", HONEST))["extensions"])
    double = {n for names in HONEST_EXTENSIONS.values() for n in names}
    assert real <= double, f"real Lean writes extensions the double does not: {sorted(real - double)}"
    for must in ("_private.Lean.Compiler.ModPkgExt.0.Lean.modPkgExt", "reducibilityCore", "Lean.projectionFnInfoExt",
                 "_private.Lean.Util.CollectAxioms.0.Lean.exportedAxiomsExt", "Lean.Linter.lintLogExt",
                 "Lean.Meta.instanceExtension", "Lean.Meta.simpExtension", "_private.Lean.Namespace.0.Lean.namespacesExt"):
        assert must in real, must


def test_a_module_file_hides_its_declarations_at_the_exported_level(core_lean, tmp_path):
    olean = _compile(core_lean, tmp_path, "Mod", "module\nprelude\ninductive T : Prop where\n  | intro : T\n"
                     "theorem pub : T := T.intro\nprivate theorem priv : T := T.intro\n")
    exported = module_data(olean)
    assert exported["is_module"]
    parts = [olean, olean.with_suffix(".olean.server"), olean.with_suffix(".olean.private")]
    assert all(p.is_file() for p in parts)
    private_root = load(*parts)[2]
    private_names = {name(n) for n in private_root[2][1]}
    assert not any(n.endswith("pub") or n.endswith("priv") for n in exported["constants"])
    assert any(n.endswith("pub") for n in private_names) and any(n.endswith("priv") for n in private_names)
