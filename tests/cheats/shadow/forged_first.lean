import Mathlib

-- Trick (a candidate forging its checkers): the candidate's text precedes every checker. A macro on the `first`
-- tactic kind turns each `first | …` checker into `sorry`, and `warn.sorry` off hides it. The
-- inspector refuses the candidate's macro before any checker runs, and each checker's own
-- axioms are inspected (sorryAx anywhere fails it).
set_option warn.sorry false

open Lean in
@[macro Lean.Parser.Tactic.first] def sorryFirst : Macro := fun _ => `(tactic| sorry)

theorem mathd_algebra_182 (y : ℂ) : 7 * (3 * y + 2) = 21 * y + 14 := by
  ring
