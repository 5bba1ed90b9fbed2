-- Trick (a text lint evaded): `attribute [csimp]` replaces compiled code by other code (here faithful,
-- but the gate cannot know that: it refuses the entry).
def slowDouble (n : Int) : Int := 2 * n

def fastDouble (n : Int) : Int := n + n

theorem slow_eq_fast : @slowDouble = @fastDouble := by
  funext n
  show 2 * n = n + n
  omega

attribute [csimp] slow_eq_fast

theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩
