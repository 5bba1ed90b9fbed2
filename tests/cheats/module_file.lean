-- Trick (Lean's module system): a file starting with `module` exports neither its proof bodies nor
-- its private declarations at the default import level, so `sorry` in a body is invisible to an
-- ordinary import. Fyan's unit files never start with `module`: written after Fyan's header it does
-- not parse, so the build refuses it; the inspector imports at the private level and names a
-- `module` file all the same (cheat `module_header` below, set up by tests/test_inspector_schema.py).
module

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, sorry⟩
