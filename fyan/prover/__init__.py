"""Prover tools: what a Lean user sees (diagnostics, goal states, hovers, tactic trials,
declaration search, axioms), as bounded, recorded functions with typed inputs and results, served
to agents (``fyan.prover.mcp_server``). Feedback for a model, never a decision: the completion
gate compiles cold and audits through the trusted inspector."""
