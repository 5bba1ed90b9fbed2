"""The Formalizer's request for a re-plan: a structured verdict and its deterministic check.

A prove attempt may end with a **verdict** instead of (or besides) a finished proof
(``verdict.py``): ``lemma_false`` names a planned lemma of the unit's lemma DAG with evidence —
a Lean proof of its negation, or a counterexample program — and ``step_too_hard`` names a planned
lemma with what was tried. ``check.py`` decides, from the attempt's files and Fyan's own programs
(never the model's word), whether the evidence holds: the negation Fyan renders from the planned
lemma's statement is compiled with the model's proof, confined in the unit's workspace, with no
``sorry``; a counterexample program is run by the refutation runner (``fyan.refute``). A checked
verdict is a re-plan: the prove run fails with ``FailureKind.REPLAN`` and a rewind to ``plan``
(``fyan.state.lifecycle``: no prove attempt charged, the frozen roots kept, bounded by
``[scheduler] max_replans``); a verdict whose evidence does not check is recorded and worth
nothing (the attempt is an ordinary failed prove attempt). ``carry.py`` keeps the helper lemmas
the attempt left proved for the re-plan's inputs and the next prove attempt.
"""
