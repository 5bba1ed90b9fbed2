"""Source lints on model-written Lean (``fyan.lean.lints``) and the lexer under them
(``fyan.lean.declarations.lex``): the families of evasion of issue 11, finding 4 — position,
spelling, attributes, literals, meta-programming — and correct line numbers."""

from __future__ import annotations

import pytest

from fyan.lean.declarations import lex
from fyan.lean.lints import errors, lint

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
