"""The Planner: the lemma DAG, the blueprint and the Lean statement scaffold (elaborated with a
toolchain, so its tasks need Lean)."""

from fyan.stages import StageSpec

SPEC = StageSpec(
    name="plan",
    order=20,
    summary="lemma DAG, blueprint and Lean statement scaffold",
    outputs=("lemma_dag.json", "blueprint.md", "Statement.lean"),
    agent="fyan.agents.stages:plan",
    check="fyan.gates.stages:check_plan",
    needs_lean=True,
)
