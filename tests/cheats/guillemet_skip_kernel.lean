-- Trick (a text lint evaded): the option name written with «» and the command behind `open … in`, then
-- an ill-typed "proof" of False added by meta-code with kernel checking off. No axiom shows;
-- only kernel replay (and the lints) can see it.
open Lean Elab Command in
set_option debug.«skipKernelTC» true in
run_cmd liftCoreM <| addDecl <| .thmDecl { name := `Cheats.ThmRoot.boom, levelParams := [],
                                           type := mkConst ``False, value := mkConst ``True.intro }

theorem double_even (n : Int) : ∃ k, double n = 2 * k :=
  Cheats.ThmRoot.boom.elim
