-- Trick (a text lint evaded): `open X in` before a command hid it from line-anchored lints.
theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩

open Nat in #eval IO.println "compile-time code"
