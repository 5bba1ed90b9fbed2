"""The Curator: reusable proof patterns (skills/) from a complete unit; only skills whose lemmas
exist are published."""

from fyan.stages import PostTaskSpec

SPEC = PostTaskSpec(
    name="curate",
    order=10,
    summary="Curator: proposes reusable skills from the finished unit",
    agent="fyan.agents.post:curate",
    check="fyan.gates.post:check_curate",
)
