"""The Auditor: a review for humans of a complete unit, opened by counts computed by code."""

from fyan.stages import PostTaskSpec

SPEC = PostTaskSpec(
    name="review",
    order=20,
    summary="Auditor: deterministic counts and a reviewer's notes (review.md)",
    agent="fyan.agents.post:review",
    check="fyan.gates.post:check_review",
)
