-- Trick: prove the root from an axiom and print forged "clean" axiom reports while compiling
-- (the text a naive gate would read from the build log), including a forged probe line.
axiom magic : False

theorem double_even (n : Int) : ∃ k, double n = 2 * k :=
  magic.elim

#eval IO.println "'Cheats.ThmRoot.double_even' depends on axioms: [propext, Classical.choice, Quot.sound]"
#eval IO.println "FYAN-PROBE-00000000000000000000000000000000 {\"name\": \"Cheats.ThmRoot.double_even\", \"found\": true, \"kind\": \"theorem\", \"axioms\": []}"
