-- Trick (the probe ran inside the candidate's world): a high-priority `ToMessageData String` instance rewrote every message the
-- old probe printed. No message is printed or read any more: the inspector writes its report
-- itself, from the compiled environment, and sees the sorry.
open Lean in
instance (priority := high) quietMessages : ToMessageData String := ⟨fun _ => MessageData.nil⟩

theorem double_even (n : Int) : ∃ k, double n = 2 * k := by
  sorry
