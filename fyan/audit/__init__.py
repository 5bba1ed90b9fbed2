"""Semantic audit: does the Lean statement say what the document says?

Models propose, code decides:

* ``formula`` — formula trees (⊤, ⊥, ∧, ∨, →, ¬, ↔, ∀/∃ with domains, atoms, definition uses),
  polarity and scope computed by code;
* ``lean_tree`` / ``statement`` — the candidate tree, parsed from the Lean statement (comments
  removed); ``source`` — the source tree a model extracts from ``problem.tex`` with literal
  quotations, checked by an independent second call;
* ``slots`` — objects, hypotheses, goals and definitions cut from both trees, with code
  findings (escaped variables, a claim assumed as a hypothesis, unfrozen local definitions);
* ``record`` — the evidence record schema and the audit result;
* ``validator`` — pure-code validation; ``grading`` — grades (omission = ⊤/⊥ at the slot's
  polarity, admissibility by polarity, min over items) and routing;
* ``transfer`` — the transfer checker (recipes e, a, g from adapters and signed certificates);
* ``judge`` — the model calls of one attempt; ``decide`` — the deterministic verdict from the
  attempt's files (what the gateway's check runs), including bridge obligations;
* ``unit`` — a unit's inputs and staleness; ``report`` — ``fyan audit``; ``evaluate`` — grades
  of records for a labelled dataset.
"""
