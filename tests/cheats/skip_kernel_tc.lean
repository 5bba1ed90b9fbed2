-- Trick: switch off kernel type checking and add an ill-typed proof of `False` with
-- metaprogramming; the root then follows from it and "does not depend on any axioms".
open Lean Elab Command in
elab "add_false_proof" : command => liftCoreM do
  addDecl <| .thmDecl { name := `Cheats.ThmRoot.boom, levelParams := [], type := mkConst ``False,
                        value := mkConst ``True.intro }

set_option debug.skipKernelTC true in
add_false_proof

theorem double_even (n : Int) : ∃ k, double n = 2 * k :=
  boom.elim
