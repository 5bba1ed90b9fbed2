-- Trick (a text lint evaded): a macro registered with the attribute form on a `def` (no `macro` command).
open Lean in
@[macro Lean.Parser.Term.paren] def rewriteParens : Macro := fun _ => Macro.throwUnsupported

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
