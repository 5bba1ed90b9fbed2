"""The completion gate: deterministic and model-free; its success completes the unit."""

from fyan.stages import StageSpec

SPEC = StageSpec(
    name="gate",
    order=50,
    summary="completion gate (build, sorry, frozen statements, axiom audit)",
    check="fyan.gates.stages:check_gate",
    needs_lean=True,
    completes=True,
)
