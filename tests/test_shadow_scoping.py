"""SA-Pass scoping on the real core ``lean`` 4.35.0 (tests/lean_core.py).

What a submission scopes to its own file — a ``local instance``, ``attribute [local instance]``,
``open``, ``set_option`` — must not reach the checkers. Lean keeps these in the command scope
(``Lean.Elab.Command.Scope``: ``opts``, ``openDecls``) or as local entries of a scoped environment
extension (``ScopedEnvExtension.addLocalEntry``: only the state stack, never an exported entry),
so a module that *imports* the compiled submission starts without them (docs/lean-contract.md,
"SA-Pass: a checker module imports the submission").

Each case compiles, with Fyan's own plain-``lean`` path (``fyan.lean.compile.compile_module``):

* the submission's candidate module (``assemble.candidate_file``) — it compiles;
* the checker appended to the submission's text, as SA-Pass assembled it before — the trick
  reaches the checker and changes what it proves (a false statement compiles, or an honest one
  does not);
* the checker module Fyan assembles now (``assemble.checker_file``), importing the compiled
  candidate — the checker is elaborated without the trick.

``prelude`` files only (this tier has no ``Init``): ``Base`` declares what ``Init`` would.
"""

from __future__ import annotations

import pytest

from fyan.config import LeanSection
from fyan.lean.compile import LeanSetup, compile_module, module_path
from fyan.shadow import assemble
from fyan.shadow.compiler import module_name
from fyan.shadow.extract import extract_candidate

pytestmark = pytest.mark.lean_core

BASE = """prelude
inductive B where | t | f
inductive MyEq {α : Sort u} : α → α → Prop where | refl (a : α) : MyEq a a
unsafe axiom lcAny : Type
unsafe axiom lcErased : Type
noncomputable section
class C (α : Type) where val : α
instance : C B := C.mk B.t
@[instance_reducible] def alt : C B := C.mk B.f
end
namespace Cheat
def f : B := B.f
end Cheat
"""

HEADER = "prelude\nimport Base\n"

#: trick, candidate, the checker's statement and proof (the candidate by name), and whether the
#: checker is *true* without the trick (then it must compile in its own module; else it must not)
CASES = {
    # the real instance says C.val = B.t: the statement is false, the local instance makes it true
    "local_instance": ("local instance cheat : C B := alt",
                       "theorem cand : MyEq (C.val : B) B.f := MyEq.refl _",
                       "MyEq (C.val : B) B.f := cand", False),
    "attribute_local_instance": ("attribute [local instance] alt",
                                 "theorem cand : MyEq (C.val : B) B.f := MyEq.refl _",
                                 "MyEq (C.val : B) B.f := cand", False),
    # `f` names Cheat.f only where `open Cheat` is in scope
    "open": ("open Cheat",
             "theorem cand : MyEq f B.f := MyEq.refl _",
             "MyEq f B.f := cand", False),
    # an option the submission sets: the checker (auto-bound `γ`, Lean's default) breaks under it
    "set_option": ("set_option autoImplicit false",
                   "theorem cand : MyEq B.f B.f := MyEq.refl _",
                   "∀ (x : γ), MyEq x x := fun x => MyEq.refl x", True),
}


@pytest.fixture
def setup(core_lean) -> LeanSetup:
    return LeanSetup(lean=core_lean, sysroot=core_lean.parent.parent, version="4.35.0", githash="eb6cafb7290e")


def _compile(setup, tmp_path, module: str, text: str, search, out):
    src = tmp_path / f"src-{module}"
    path = module_path(src, module, ".lean")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return compile_module(setup, source_root=src, module=module, out_root=out, search_path=list(search),
                          config=LeanSection(sandbox="off", build_timeout=120), log_dir=tmp_path / "logs", name=module)


@pytest.fixture
def base(setup, tmp_path):
    out = tmp_path / "base"
    result = _compile(setup, tmp_path, "Base", BASE, [], out)
    assert result.ok, result.reason
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_what_a_submission_scopes_to_its_file_does_not_reach_a_checker_module(setup, base, tmp_path, case):
    trick, cand, checker, true_without_trick = CASES[case]
    submission = f"{HEADER}\n{trick}\n\n{cand}\n"
    candidate = extract_candidate(submission)
    cfile = assemble.candidate_file(candidate, "0" * 32)
    cmod = module_name(cfile.text, cfile.nonce)
    lib = tmp_path / "lib"
    compiled = _compile(setup, tmp_path, cmod, cfile.text, [base], lib)
    assert compiled.ok, compiled.reason
    check = f"theorem fyan_shadow_check : {checker}\n"
    nonce = "c" * 32

    # as SA-Pass assembled it before: the checker after the submission's text, in one file
    one_text = cfile.text + "\n" + assemble.name_checker(check, nonce)
    shared = _compile(setup, tmp_path, "OneFile", one_text, [base], tmp_path / "one")
    assert shared.ok != true_without_trick, shared.reason  # the trick reached the checker

    # now: a module of its own that imports the compiled candidate
    f = assemble.checker_file(cmod, HEADER, "forward:s", check, nonce)
    assert trick not in f.text and f"import {cmod}" in f.text
    own = _compile(setup, tmp_path, module_name(f.text, nonce), f.text, [lib, base], tmp_path / "own")
    assert own.ok == true_without_trick, own.reason
    if not true_without_trick:
        assert any(d.severity == "error" for d in own.diagnostics)


@pytest.mark.parametrize("case", ["local_instance", "attribute_local_instance"])
def test_a_local_instance_leaves_no_instance_entry_for_the_inspector_to_see(setup, base, tmp_path, case):
    """Why the module boundary, not the extension policy, keeps what a submission scopes to its file from its checkers: a local instance is
    written to no exported extension (``ScopedEnvExtension.addLocalEntry``), so the inspector's
    report of the candidate module shows nothing — while a global instance (``Base``) is an
    ``instanceExtension`` entry."""
    from tests.olean_reader import module_data

    trick, cand, _, _ = CASES[case]
    cfile = assemble.candidate_file(extract_candidate(f"{HEADER}\n{trick}\n\n{cand}\n"), "0" * 32)
    cmod = module_name(cfile.text, cfile.nonce)
    assert _compile(setup, tmp_path, cmod, cfile.text, [base], tmp_path / "lib").ok
    mine = module_data(module_path(tmp_path / "lib", cmod, ".olean"))["extensions"]
    assert not mine.get("Lean.Meta.instanceExtension")
    assert module_data(base / "Base.olean")["extensions"].get("Lean.Meta.instanceExtension") == 1
