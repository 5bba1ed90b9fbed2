-- Trick (a text lint evaded; lean-ja/lean-by-example#1743): `run_tac` runs meta-code inside a proof; here
-- it adds an ill-typed "proof" of False with kernel checking switched off. No axiom shows;
-- kernel replay (and the lints) see it.
theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  run_tac do
    let decl := Lean.Declaration.thmDecl { name := `Cheats.ThmRoot.boom, levelParams := [],
                                           type := Lean.mkConst ``False, value := Lean.mkConst ``True.intro }
    Lean.withOptions (fun o => o.setBool `debug.skipKernelTC true) (Lean.addDecl decl)
  exact Cheats.ThmRoot.boom.elim
