-- Trick (a lint-rejected candidate was compiled): compile-time IO. It leaves no trace in the environment; the lint refuses
-- it, so it is never compiled in the prove loop, and builds are confined.
theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩

#eval IO.FS.writeFile "forged.txt" "written at compile time"
