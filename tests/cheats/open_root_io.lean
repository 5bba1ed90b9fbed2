-- Trick: `open _root_.IO in`: the IO lint matched `IO` only where no dot precedes it,
-- so an IO action written with the opened names passed it.
open _root_.IO in
def announce := println "double is proved"

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
