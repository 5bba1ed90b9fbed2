-- Trick (a text lint evaded): an axiom behind `open X in`.
open Nat in axiom magic : False

theorem double_even (n : Int) : ∃ k, double n = 2 * k :=
  magic.elim
