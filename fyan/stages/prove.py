"""The Formalizer: the Lean proof (Basic.lean), iterated against the toolchain's diagnostics."""

from fyan.stages import StageSpec

SPEC = StageSpec(
    name="prove",
    order=40,
    summary="Lean proof (Basic.lean), iterated against the build's diagnostics",
    outputs=("Basic.lean",),
    extra_outputs=("iterations.json",),  # the iteration log
    agent="fyan.agents.stages:prove",
    check="fyan.gates.stages:check_prove",
    needs_lean=True,
)
