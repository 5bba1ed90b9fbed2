"""SA-Pass scores, computed with exact fractions.

For one submission with n forward checks:

* ``compile`` ∈ {0, 1}: the candidate file compiles (and obeys the sorry policy);
* ``forward`` = passed forward checks / n (0 when it does not compile);
* ``backward`` ∈ {0, 1} (0 when it does not compile);
* ``sa_pass`` = 1 only if it compiles, every forward check and the backward check pass;
* ``sa_pass_soft`` = ½·forward + ½·backward, and 0 when it does not compile.

A summary averages each over the submissions: compile rate, SA-Pass, SA-Pass_soft, forward-all
rate (share of submissions whose every forward check passed), backward rate.
"""

from __future__ import annotations

from fractions import Fraction

from pydantic import BaseModel, Field

HALF = Fraction(1, 2)


class Scores(BaseModel):
    compile: int
    forward_passed: int
    forward_total: int
    backward: int
    sa_pass: int
    sa_pass_soft: float = Field(description="Rounded to 6 digits; exact value in sa_pass_soft_exact")
    sa_pass_soft_exact: str = Field(description="The exact fraction, e.g. '5/6'")

    @property
    def forward_fraction(self) -> Fraction:
        return Fraction(self.forward_passed, self.forward_total) if self.forward_total else Fraction(0)

    @property
    def forward_all(self) -> bool:
        return self.compile == 1 and self.forward_total > 0 and self.forward_passed == self.forward_total


def soft(compiled: bool, forward: list[bool], backward: bool) -> Fraction:
    """SA-Pass_soft as an exact fraction."""
    if not compiled or not forward:
        return Fraction(0)
    return HALF * Fraction(sum(forward), len(forward)) + HALF * int(backward)


def score(compiled: bool, forward: list[bool], backward: bool) -> Scores:
    """Scores of one submission from its check results (``forward`` one bool per shadow).

    A submission that does not compile scores 0 everywhere, whatever ``forward``/``backward`` say.
    """
    if not forward:
        raise ValueError("a shadow set has at least one shadow")
    fwd = list(forward) if compiled else [False] * len(forward)
    bwd = bool(backward) and compiled
    exact = soft(compiled, fwd, bwd)
    return Scores(
        compile=int(compiled), forward_passed=sum(fwd), forward_total=len(fwd), backward=int(bwd),
        sa_pass=int(compiled and all(fwd) and bwd), sa_pass_soft=round(float(exact), 6),
        sa_pass_soft_exact=str(exact),
    )


class Summary(BaseModel):
    """Rates over ``submissions`` scored submissions (all 0 when there are none)."""

    submissions: int
    compile_rate: float
    sa_pass: float
    sa_pass_soft: float
    forward_all_rate: float
    backward_rate: float


def summarize(scores: list[Scores]) -> Summary:
    n = len(scores)

    def mean(values) -> float:
        return round(float(sum((Fraction(v) for v in values), Fraction(0)) / n), 6) if n else 0.0

    return Summary(
        submissions=n,
        compile_rate=mean(s.compile for s in scores),
        sa_pass=mean(s.sa_pass for s in scores),
        sa_pass_soft=mean(Fraction(s.sa_pass_soft_exact) for s in scores),
        forward_all_rate=mean(int(s.forward_all) for s in scores),
        backward_rate=mean(s.backward for s in scores),
    )
