"""The completeness check of a shadow set.

A shadow set is *complete* when, against its own reference (header + reference declarations):

1. the reference compiles by itself (sorry proofs allowed: only its statement matters);
2. every forward checker compiles (T ⇒ Sᵢ), each in its own copy of the reference file;
3. the backward checker compiles (⋀Sᵢ ⇒ T);
4. no forward checker compiles when the target is replaced by ``theorem <target> : True :=
   trivial`` (the *vacuity probe*): a checker that still compiles proves its shadow without the
   target, so it would pass for every candidate and measures nothing.

Without a compiler (no Lean toolchain) the set is not complete and every check says why: the
check fails closed, it never assumes success.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from fyan.shadow import assemble
from fyan.shadow.compiler import Compiler, new_nonce
from fyan.shadow.evaluate import judge
from fyan.shadow.shadowset import ShadowSet, checkers


class CheckerVerdict(BaseModel):
    check: str = Field(description="reference | forward:<id> | backward | vacuity:<id>")
    passed: bool
    reason: str
    origin: str | None = None


class Completeness(BaseModel):
    problem: str
    complete: bool
    checks: list[CheckerVerdict]

    @property
    def failures(self) -> list[CheckerVerdict]:
        return [c for c in self.checks if not c.passed]


def _names(shadow_set: ShadowSet) -> list[str]:
    return ["reference", *checkers(shadow_set), *(f"vacuity:{s.id}" for s in shadow_set.shadows)]


def check_completeness(shadow_set: ShadowSet, compiler: Compiler | None, *, unavailable: str = "") -> Completeness:
    """Run the checks of the module docstring. ``compiler=None`` fails every check with
    ``unavailable`` (the reason there is no toolchain). Raises what the compiler raises."""
    if compiler is None:
        why = f"not checked: {unavailable or 'no Lean toolchain'}"
        checks = [CheckerVerdict(check=n, passed=False, reason=why) for n in _names(shadow_set)]
        return Completeness(problem=shadow_set.problem, complete=False, checks=checks)
    label = f"{shadow_set.problem}/reference"
    verdicts: list[CheckerVerdict] = []
    ref = assemble.reference_file(shadow_set, "reference", None, new_nonce())
    out = compiler.compile(ref.text, label=f"{label}/reference", nonce=ref.nonce, lookups=[shadow_set.target])
    ok, why = judge(out, ref)
    if ok and (out.inspection.lookup(shadow_set.target) is None or not out.inspection.lookup(shadow_set.target).found):
        ok, why = False, f"the reference's target {shadow_set.target} is not in the compiled module"
    verdicts.append(CheckerVerdict(check="reference", passed=ok, reason=why, origin=out.origin))
    for check, checker in checkers(shadow_set).items():
        if not ok:
            verdicts.append(CheckerVerdict(check=check, passed=False, reason="not run: the reference does not compile"))
            continue
        f = assemble.reference_file(shadow_set, check, checker, new_nonce())
        o = compiler.compile(f.text, label=f"{label}/{check}", nonce=f.nonce, lookups=[f.checker_name],
                             black_box=[shadow_set.target])
        passed, reason = judge(o, f)
        verdicts.append(CheckerVerdict(check=check, passed=passed, reason=reason, origin=o.origin))
    for s in shadow_set.shadows:
        check = f"vacuity:{s.id}"
        if not ok:
            verdicts.append(CheckerVerdict(check=check, passed=False, reason="not run: the reference does not compile"))
            continue
        f = assemble.reference_file(shadow_set, check, checkers(shadow_set)[f"forward:{s.id}"], new_nonce(), vacuous=True)
        o = compiler.compile(f.text, label=f"{label}/{check}", nonce=f.nonce, lookups=[f.checker_name],
                             black_box=[shadow_set.target])
        if o.exit_code is None or o.timed_out:
            verdicts.append(CheckerVerdict(check=check, passed=False, origin=o.origin,
                                           reason=f"undecided: the vacuity probe did not finish ({o.note or 'no exit status'})"))
            continue
        still, _ = judge(o, f)
        verdicts.append(CheckerVerdict(
            check=check, passed=not still, origin=o.origin,
            reason="depends on the target (fails without it)" if not still
            else "vacuous: the forward checker proves its shadow without the target",
        ))
    return Completeness(problem=shadow_set.problem, complete=all(v.passed for v in verdicts), checks=verdicts)
