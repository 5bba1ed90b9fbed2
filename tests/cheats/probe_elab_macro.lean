-- Trick (the probe ran inside the candidate's world): a macro on the `elab` command kind. The old gate elaborated a probe file
-- after importing the unit, so this macro rewrote the probe's own `elab` command (e.g. to drop
-- `sorryAx` from what it reported) and the `sorry` below passed. The trusted inspector
-- elaborates nothing after the import: the macro is inert, the sorry is seen.
open Lean in
@[macro Lean.Parser.Command.elab] def rewriteProbe : Macro := fun _ => Macro.throwUnsupported

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  sorry
