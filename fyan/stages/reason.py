"""The Reasoner: an informal proof of the unit's statement, reviewed by a refutation pass."""

from fyan.stages import StageSpec

SPEC = StageSpec(
    name="reason",
    order=10,
    summary="informal proof (proof.md), reviewed by a refutation pass",
    outputs=("proof.md",),
    extra_outputs=("proof_review.json",),  # the last review
    agent="fyan.agents.stages:reason",
    check="fyan.gates.stages:check_reason",
)
