-- Trick (a text lint evaded): a raw string whose content looks like a comment opener made the old comment
-- stripper hide the `#eval` that follows it on the same line.
theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩

def note : String := r"--" #eval IO.println "runs at compile time"
