-- Trick (a text lint evaded): the macro attribute added afterwards with `attribute [macro …] f`.
open Lean in
def rewriteParens : Macro := fun _ => Macro.throwUnsupported

attribute [macro Lean.Parser.Term.paren] rewriteParens

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
