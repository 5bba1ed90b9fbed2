"""The Reasoner review's counterexample searches, run by the worker (never by the model).

``run_review_searches`` takes the searches a review reply proposes
(``fyan.agents.schemas.CounterexampleSearch``), runs at most ``[refute] per_review`` of them
confined (``fyan.refute.record.run_proposals``: the project folder hidden, writes only in the
search's own folder of the attempt) and returns the attempt's log. ``revision_request`` words the
forced revision when ``standing`` refutations reach ``[refute] threshold``: the refuted steps with
their witnesses, and the instruction to keep every step they do not touch.
"""

from __future__ import annotations

from pathlib import Path

from fyan.refute.models import RefutationLimits, RefutationProgram
from fyan.refute.record import RefutationEntry, RefutationLog, describe, run_proposals
from fyan.refute.runner import LeanCheck


def limits_of(config) -> RefutationLimits:
    """The runner's limits from ``[refute]`` (``fyan.config.RefuteSection``)."""
    return RefutationLimits(timeout_s=config.timeout_s, memory_mb=config.memory_mb, max_cases=config.max_cases)


def lean_check(project, log_dir: Path | None = None) -> LeanCheck | None:
    """The toolchain a Lean search compiles with (the project's pinned ``lean``, its Lake package's
    dependency folders), or None when there is none (a Lean search is then worthless, never run
    some other way)."""
    from fyan.lean.toolchain import discover
    from fyan.lakepackage.trusted import GateEnvironmentError, resolve_setup

    disc = discover(project.config.lean, cwd=project.paths.lean)
    if disc.toolchain is None:
        return None
    try:
        setup = resolve_setup(project, disc.toolchain, log_dir)
    except GateEnvironmentError:
        return None
    return LeanCheck(lean=setup.lean, env=setup.environment(), readable=tuple(setup.readable()))


def lean_header(project) -> str:
    """The header of a Lean search the review proposes: the project's library (Mathlib when the
    package requires it), nothing else."""
    return "import Mathlib\n" if project.config.lean.mathlib else ""


def run_review_searches(project, attempt_dir: Path, round_: int, proof_text: str, proposals: list,
                        log: RefutationLog) -> RefutationLog:
    """Run the first ``[refute] per_review`` of ``proposals`` (each a ``CounterexampleSearch``)
    against ``proof_text``; a proposal whose fields do not make a program was refused by the
    review's form check already. Returns ``log`` with them appended (also written as the
    attempt's ``refutations.json``)."""
    cfg = project.config.refute
    programs: list[RefutationProgram] = []
    for p in proposals[: cfg.per_review]:
        program = p.program()
        if program.language == "lean":
            program = program.model_copy(update={"lean_header": lean_header(project)})
        programs.append(program)
    if not programs:
        return log
    lean = lean_check(project, attempt_dir) if any(p.language == "lean" for p in programs) else None
    return run_proposals(programs, attempt_dir, round_, proof_text, limits_of(cfg),
                         hidden=(project.paths.root,), lean=lean, log=log)


def revision_request(entries: list[RefutationEntry], threshold: int) -> str:
    """The Reasoner's instruction after ``threshold`` executed refutations stand against its proof."""
    lines = [f"Fyan ran counterexample searches against your previous proof; {len(entries)} assertion(s) of it are "
             f"refuted by executed, re-checked counterexamples (the threshold is {threshold}):"]
    lines += [f"- {describe(e)}" for e in entries]
    lines.append("Revise the proof: replace or repair exactly these steps; keep every step they do not touch as it "
                 "is. Do not state the refuted assertions again.")
    return "\n".join(lines)
