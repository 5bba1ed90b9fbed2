"""Source lints on model-written Lean (``fyan.lean.lints``) and the lexer under them
(``fyan.lean.declarations.lex``): the families of evasion by which text can hide a construct — position,
spelling, attributes, literals, meta-programming — and correct line numbers."""

from __future__ import annotations

import pytest

from fyan.lean.declarations import lex
from fyan.lean.lints import FORBIDDEN_NAMES, errors, lint

HONEST = """theorem add_comm' (a b : Nat) : a + b = b + a := by
  -- a comment that mentions #eval, axiom and native_decide is harmless
  omega

/-- A doc comment: `unsafe`, `#exit`, `macro` are just words here. -/
def double (n : Int) : Int := 2 * n

theorem double_eq (n : Int) (h' : 0 ≤ n) : double n = n + n := by
  simp only [double]
  omega

example : "a -- b".length = 6 := rfl
example : 'x'.toNat = 120 := rfl

#check double_eq
#print axioms double_eq
example : #[1, 2].size = 2 := rfl
"""


def rules(src: str) -> set[str]:
    return {f.rule for f in errors(lint(src))}


def test_honest_code_has_no_error():
    assert errors(lint(HONEST)) == [], [str(f) for f in lint(HONEST)]


@pytest.mark.parametrize("src, rule", [
    # position: a prefix or another command on the same line hides nothing
    ("open Nat in #eval 1", "eval"),
    ("set_option pp.all true in #eval 1", "eval"),
    ("theorem t : True := trivial #eval 1", "eval"),
    ("open Nat in axiom ax : False", "axiom"),
    ("@[simp] axiom ax : False", "axiom"),
    ("private axiom ax : False", "axiom"),
    ("open Nat in #exit", "exit"),
    ("open Nat in run_cmd pure ()", "run-cmd"),
    ("open Nat in initialize pure ()", "initialize"),
    ("open Nat in opaque o : Nat", "opaque"),
    ("noncomputable opaque o : Nat", "opaque"),
    ("open Lean in elab \"x\" : command => pure ()", "meta-code"),
    ("open Lean in macro_rules | `(x) => `(y)", "meta-code"),
    ("local notation \"d\" => 0", "notation"),
    ("scoped infix:50 \" ~ \" => Eq", "notation"),
    ("def f := 1\nunsafe def g := 1", "unsafe"),
    ("partial def loop : Nat → Nat := loop", "partial"),
    # spelling: «» quotes and option names
    ("set_option debug.«skipKernelTC» true in theorem t : True := trivial", "skip-kernel"),
    ("set_option «debug».skipKernelTC true", "skip-kernel"),
    ("set_option «autoImplicit» true", "auto-implicit"),
    ("set_option relaxedAutoImplicit true in theorem t : True := trivial", "auto-implicit"),
    ("set_option warn.«sorry» false", "warn-sorry-off"),
    # attributes, both forms, local/scoped included
    ("@[macro Lean.Parser.Command.elab] def m : Lean.Macro := fun _ => default", "attribute"),
    ("@[simp, command_elab Lean.Parser.Command.check] def e := 0", "attribute"),
    ("@[tactic Lean.Parser.Tactic.decide] def t := 0", "attribute"),
    ("attribute [macro Lean.Parser.Term.paren] m", "attribute"),
    ("attribute [local csimp] slow_eq_fast", "attribute"),
    ("attribute [implemented_by g] f", "attribute"),
    ("@[implemented_by g] def f := 0", "attribute"),
    ("@[extern \"c_f\"] def f := 0", "attribute"),
    ("@[init initFn] def x : IO Unit := pure ()", "attribute"),
    ("@[export c_name] def f := 0", "attribute"),
    ("@[default_instance] instance : Add Nat := ⟨Nat.add⟩", "attribute"),
    # compiler trust in every spelling
    ("example : 1 = 1 := by native_decide", "native-decide"),
    ("example : 1 = 1 := by decide +native", "native-decide"),
    ("example : 1 = 1 := by decide (config := {native := true})", "native-decide"),
    ("example : 1 = 1 := by decide (config := { native := true })", "native-decide"),
    ("example : x = y := by bv_decide", "native-decide"),
    # meta-programming inside a proof
    ("example : True := by run_tac pure ()", "run-cmd"),
    ("example : True := by_elab pure (Lean.mkConst ``True.intro)", "run-cmd"),
    ("def f := Lean.Environment.addDeclWithoutChecking", "meta-api"),
    ("example : True := by exact (addDecl d)", "meta-api"),
    ("#guard 1 = 1", "eval"),
    ("#eval! 1", "eval"),
    ("open private foo from Bar", "open-private"),
    ("#html (Html.text \"x\")", "hash-command"),
    ("#some_library_command x", "hash-command"),
    ("example : True := by exact (unsafeIO (pure ()) |>.toOption).elim", "io"),
    ("def f : IO Unit := IO.println 1", "io"),
    ("notation3 \"d\" => 0", "notation"),
    ("prelude", "prelude"),
    ("import Mathlib", "import"),
])
def test_each_evasion_is_caught(src, rule):
    assert rule in rules(src), [str(f) for f in lint(src)]


@pytest.mark.parametrize("src", [
    'def s := r"--" #eval 1',                         # a raw string that looks like a comment opener
    'def s := r#"-- " "#  #eval 1',                   # with hashes
    "def c := ('\\\"'.toString ++ \"-- \") #eval 1",  # a char literal with a quote
    "def c := '\"' #eval 1",                           # the plain quote char
    "def «a -- b» := 1 #eval 1",                       # a «» name containing a comment opener
    's!"{\'"\'} -- " #eval 1',                         # an interpolated string hiding code
])
def test_literals_never_hide_code(src):
    found = {f.rule for f in errors(lint(src))}
    assert "eval" in found or "unreadable-literal" in found, [str(f) for f in lint(src)]


@pytest.mark.parametrize("src, comment_free", [
    ('"a -- b" x', '"a -- b" x'),
    ("'\"' -- c", "'\"'     "),
    ("'\\'' -- c", "'\\''     "),
    ("x' -- c", "x'     "),
    ("«a--b» y", "«a--b» y"),
    ("/- a /- b -/ c -/ d", "                  d"),
    ('"\\"" -- c', '"\\""     '),
    ('"\\\\" -- c', '"\\\\"     '),
])
def test_the_lexer_finds_comments_where_lean_does(src, comment_free):
    assert lex(src).code == comment_free


def test_unreadable_literals_are_refused_not_guessed():
    assert "unreadable-literal" in rules('def s := r"raw"')
    assert "unreadable-literal" in rules('def s := s!"{x}"')
    assert "unreadable-literal" in rules('def s := "{"')
    assert "unreadable-literal" in rules('def s := "unterminated')
    assert "unreadable-literal" in rules("/- unterminated comment")
    assert "unreadable-literal" not in rules('def s := "plain, no braces: -- /- -/"')


def test_findings_point_at_the_constructs_own_line():
    """Finding 4: `(?m)^\\s*` made a finding start at the blank line before the construct."""
    src = "theorem t : True := trivial\n\n\n  #eval 1\n\n\naxiom ax : False\n"
    lines = {f.rule: f.line for f in lint(src)}
    assert lines == {"eval": 4, "axiom": 7}
    assert [f.text for f in lint(src)] == ["#eval 1", "axiom ax : False"]
    braced = 'theorem t : True := trivial\n\n\ndef s := "{"\n'
    assert [(f.rule, f.line) for f in lint(braced)] == [("unreadable-literal", 4)]


# -- names resolved as Lean resolves them (src/Lean/ResolveName.lean) ---------------

@pytest.mark.parametrize("src, rule", [
    # `_root_.`: the IO lint matched `IO` only without a dot before it
    ("open _root_.IO\ndef f := println \"x\"", "io"),
    ("open _root_.IO in\ntheorem t : True := trivial", "io"),
    ("def f : _root_.IO Unit := pure ()", "io"),
    ("def f := _root_.IO.println \"x\"", "io"),
    # `export`, `open … renaming`, `open … hiding`, `open … (x)`, `open scoped`
    ("export IO (println)", "io"),
    ("open IO renaming println → say\ndef f := say \"x\"", "io"),
    ("open IO hiding print\ndef f := println \"x\"", "io"),
    ("open IO (println)\ndef f := println \"x\"", "io"),
    ("open scoped IO\ndef f := 0", "io"),
    # kernel-evaluated constants: spelled out, under `open Lean in`, renamed, through a namespace, an alias
    ("theorem t : Lean.reduceBool b = true := rfl", "kernel-evaluated"),
    ("open Lean in\ntheorem t : reduceBool b = true := rfl", "kernel-evaluated"),
    ("open Lean renaming reduceNat → rn\ntheorem t : rn 1 = 1 := rfl", "kernel-evaluated"),
    ("open Lean hiding Name\ntheorem t : reduceNat x = 1 := rfl", "kernel-evaluated"),
    ("namespace Lean\ntheorem t : reduceBool x = true := rfl\nend Lean", "kernel-evaluated"),
    ("abbrev rb := Lean.reduceBool\ntheorem t : rb b = true := rfl", "kernel-evaluated"),
    ("open _root_.Lean in\ntheorem t : ofReduceBool a b h = h := rfl", "kernel-evaluated"),
    # the meta API through an opened namespace
    ("open Lean\ndef f := Elab.Command.elabCommand", "meta-api"),
    ("open Lean Elab in\ndef f := Command.elabCommand", "meta-api"),
    ("namespace Lean.Meta\ndef f := 0\nend Lean.Meta", "meta-api"),
])
def test_names_are_resolved_as_lean_resolves_them(src, rule):
    assert rule in rules(src), [str(f) for f in lint(src)]


@pytest.mark.parametrize("src", [
    "example : 1 = 1 := by decide (config := { native := (true) })",
    "example : 1 = 1 := by decide (config := { native := Bool.true })",
    "example : 1 = 1 := by decide (config := { native := _root_.Bool.true })",
    "example : 1 = 1 := by decide (config := {native := true, ..})",
    "example : 1 = 1 := by decide (config := ({ kernel := false, native := ((true)) }))",
    "example : 1 = 1 := by decide (config := { native /- off? -/ := -- no\n  true })",
    "example : 1 = 1 := by decide (native := true)",
    "example : 1 = 1 := by decide +native",
    "example : 1 = 1 := by decide + native",
    "example : 1 = 1 := by decide (config := { native := !false })",
    "example : 1 = 1 := by decide (config := (⟨false, false, true, false⟩ : Lean.Parser.Tactic.DecideConfig))",
])
def test_compiler_trust_in_every_spelling(src):
    """`decide`'s `native` option in any spelling but a literal `false`."""
    assert "native-decide" in rules(src), [str(f) for f in lint(src)]


@pytest.mark.parametrize("src", [
    "open Nat in\ntheorem t (n : Nat) : n + 0 = n := rfl",
    "example : 1 = 1 := by decide (config := { native := false })",
    "example : 1 = 1 := by decide +kernel",
    "namespace Foo\ndef println := 0\nend Foo\nopen Foo in\nexample : println = 0 := rfl",
    "theorem reduceBoolish : True := trivial",
])
def test_resolution_refuses_no_honest_name(src):
    assert errors(lint(src)) == [], [str(f) for f in lint(src)]


_PRELUDE = """prelude
inductive N where
  | z : N
namespace IO
def println : N := N.z
def print : N := N.z
end IO
namespace Lean
def reduceBool (b : N) : N := b
end Lean
"""

#: (spelling, the declaration it defines, the full name real Lean resolves the spelling to)
_SPELLINGS = [
    ("open _root_.IO in\ndef x := println", "x", "IO.println"),
    ("open IO renaming println → say in\ndef x := say", "x", "IO.println"),
    ("open IO hiding print in\ndef x := println", "x", "IO.println"),
    ("open IO (println) in\ndef x := println", "x", "IO.println"),
    ("namespace IO\ndef x := println\nend IO", "IO.x", "IO.println"),
    ("export IO (println)\ndef x := println", "x", "IO.println"),
    ("open Lean in\ndef x := reduceBool N.z", "x", "Lean.reduceBool"),
    ("open _root_.Lean renaming reduceBool → rb in\ndef x := rb N.z", "x", "Lean.reduceBool"),
]


@pytest.mark.lean_core
@pytest.mark.parametrize("spelling, decl, full", _SPELLINGS)
def test_real_lean_resolves_each_spelling_to_the_name_the_lint_refuses(core_lean, tmp_path, spelling, decl, full):
    """Real Lean 4.35.0 (prelude file) resolves each spelling to ``full`` (``#print`` with full
    names), and the lint, reading the same spelling, refuses ``full``."""
    import json
    import subprocess

    path = tmp_path / "Spelling.lean"
    path.write_text(f"{_PRELUDE}{spelling}\nset_option pp.fullNames true\n#print {decl}\n")
    out = subprocess.run([str(core_lean), "--json", str(path)], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    messages = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert out.returncode == 0 and not [m for m in messages if m["severity"] == "error"], out.stdout
    printed = messages[-1]["data"]
    assert full in printed.split(":=", 1)[1], printed
    root = next(n for n in FORBIDDEN_NAMES if full == n or full.startswith(n + "."))  # IO, Lean.reduceBool
    assert FORBIDDEN_NAMES[root][0] in rules(spelling), [str(f) for f in lint(spelling)]
