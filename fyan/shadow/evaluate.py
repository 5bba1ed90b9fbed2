"""Evaluate submissions against shadow sets.

For one submission (``evaluate_submission``):

1. extract the candidate (``extract``: the last theorem block) and lint the kept text: the
   error rules of ``fyan.lean.lints`` (``import`` allowed; new notation is an error), a fast
   second line;
2. adapt names (``adapt``; a model-drafted adapter only as a fallback, when one is configured);
3. compile the candidate file and read it with the trusted inspector (``compiler``): it
   *compiles* when Lean reports no error, exits 0, and the inspector finds the candidate in the
   compiled module; the module must register **no** syntax, elaborator, tactic, macro,
   instance or other extension entry outside the harmless ones, and declare no axiom and
   nothing ``unsafe``/``implemented_by``/``extern`` (``fyan.lean.policy``, strict: a candidate
   that could change how a checker elaborates is rejected *before its checkers run*, with the
   reason); the candidate's transitive axioms have no ``sorryAx`` (unless ``allow_sorry_proofs``,
   for statement-only benchmarks — then no definition may use it and the statement itself
   never) and none outside the allow-list;
4. when it compiles, compile each checker in a module of its own that imports the compiled
   candidate module (``assemble.checker_file``: nothing the submission scopes to its file reaches
   a checker; forward checks, then the backward check): a check passes when the file compiles without error and the
   inspector finds the checker theorem, with no ``sorryAx`` anywhere in it (its axioms are
   computed with the candidate's own proof as a black box, so only the checker's proof counts)
   and no axiom outside the allow-list;
5. score (``score``).

The batch (``run_eval``) evaluates every submission in parallel (``jobs`` threads, each compile
bounded by the compiler's timeout) and writes one JSON report per problem, the assembled Lean
files, and ``summary.json``.

Submissions live in ``<DIR>/<problem>.lean`` (one per problem) or ``<DIR>/<problem>/<name>.lean``
(several variants of a problem). A shadow set without any submission counts as a submission that
does not compile (a benchmark's denominator is its problems); a submission without a shadow set
is reported as skipped.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from fyan.sandbox import safefile
from fyan.errors import InputError
from fyan.lean.inspector import InspectedModule, module_findings
from fyan.lean.lints import lint
from fyan.lean.policy import is_native_axiom
from fyan.shadow import assemble
from fyan.shadow.adapt import Adaptation, adapt, rename
from fyan.shadow.compiler import CompileOutcome, Compiler, module_name, new_nonce
from fyan.shadow.extract import Candidate, NoCandidate, extract_candidate
from fyan.shadow.score import Scores, Summary, score, summarize
from fyan.shadow.shadowset import ShadowSet, checkers, find_file

DEFAULT_ALLOWED_AXIOMS = ("propext", "Classical.choice", "Quot.sound")
REPORT_FORMAT = "fyan-shadow-eval/1"

#: A fallback that drafts adapter declarations for unresolved names (``fyan.agents.shadow_adapter``).
AdapterFn = Callable[[ShadowSet, Candidate, Adaptation], Adaptation]


class CheckOutcome(BaseModel):
    check: str
    passed: bool
    reason: str
    file: str | None = Field(default=None, description="The assembled file, relative to the report folder")
    exit_code: int | None = None
    duration_s: float = 0.0
    origin: str | None = Field(default=None, description="Where the compile result came from")
    errors: list[str] = Field(default_factory=list, description="First error messages, 'line N: text'")


class CandidateInfo(BaseModel):
    name: str
    kind: str
    line_start: int
    line_end: int
    helpers: int
    sorry_in_statement: bool
    sorry_in_proof: bool
    axioms: list[str] | None = None


class SubmissionReport(BaseModel):
    problem: str
    submission: str
    path: str | None = None
    note: str | None = None
    candidate: CandidateInfo | None = None
    adaptation: Adaptation | None = None
    lint: list[str] = Field(default_factory=list)
    compile: CheckOutcome
    forward: list[CheckOutcome] = Field(default_factory=list)
    backward: CheckOutcome | None = None
    scores: Scores


def _error_lines(outcome: CompileOutcome, limit: int = 3) -> list[str]:
    return [f"line {d.line}: {d.text.splitlines()[0] if d.text else ''}" for d in outcome.errors[:limit]]


def _compiled(outcome: CompileOutcome, assembled: assemble.Assembled) -> tuple[bool, str]:
    """Did Lean compile this file? (passed, reason)"""
    if outcome.timed_out:
        return False, f"timed out ({outcome.note or 'killed at the timeout'})"
    if outcome.exit_code is None:
        return False, f"did not run: {outcome.note or 'no exit status'}"
    if outcome.errors:
        first = outcome.errors[0]
        where = ""
        if assembled.checker_lines and first.line is not None:
            lo, hi = assembled.checker_lines
            where = " (in the checker)" if lo <= first.line <= hi else " (outside the checker)"
        text = first.text.splitlines()[0] if first.text else ""
        return False, f"Lean error at line {first.line}{where}: {text}"
    if outcome.exit_code != 0:
        return False, f"lean exited with {outcome.exit_code} without an error message"
    if outcome.inspection is None:
        return False, f"no evidence from the trusted inspector: {outcome.inspection_problem or 'not inspected'}"
    return True, "compiles"


def judge(outcome: CompileOutcome, assembled: assemble.Assembled,
          allowed_axioms: tuple[str, ...] = DEFAULT_ALLOWED_AXIOMS) -> tuple[bool, str]:
    """Did this checker file pass (module docstring, step 4)? (passed, reason). A file without
    a checker (a reference) passes when it compiles and is inspected."""
    ok, why = _compiled(outcome, assembled)
    if not ok or assembled.checker_name is None:
        return ok, why
    report = outcome.inspection
    assert report is not None
    rec = report.lookup(assembled.checker_name)
    if rec is None or not rec.found:
        return False, "the checker is not in the compiled module (elaboration stopped before it)"
    if rec.uses_sorry:
        return False, "the checker uses sorry (sorryAx in its own proof)"
    bad = _bad_axioms(rec.axioms, allowed_axioms, allow_sorry=False)
    if bad:
        return False, "the checker depends on " + ", ".join(bad)
    return True, "compiles; the checker is sorry-free and axiom-clean"


def _bad_axioms(axioms: list[str], allow: tuple[str, ...], allow_sorry: bool) -> list[str]:
    bad = []
    for a in axioms:
        if a == "sorryAx":
            if not allow_sorry:
                bad.append("sorryAx (sorry)")
        elif a in ("Lean.ofReduceBool", "Lean.trustCompiler") or is_native_axiom(a):
            bad.append(f"{a} (native_decide-style axiom)")
        elif a not in allow:
            bad.append(f"{a} (not in the allow-list)")
    return bad


def judge_candidate(outcome: CompileOutcome, assembled: assemble.Assembled, candidate_name: str, *,
                    allowed_axioms: tuple[str, ...], allow_sorry_proofs: bool) -> tuple[bool, str, list[str] | None]:
    """Step 3 of the module docstring: (compiled, reason, the candidate's axioms or None)."""
    ok, why = _compiled(outcome, assembled)
    if not ok:
        return False, why, None
    report = outcome.inspection
    assert report is not None
    rec = report.lookup(candidate_name)
    if rec is None or not rec.found:
        return False, f"the candidate {candidate_name} is not in the compiled module", None
    module = report.module(outcome.module) if outcome.module else None
    only = report.modules[0] if len(report.modules) == 1 else None
    module = module or (only if isinstance(only, InspectedModule) else None)  # a missing module is no evidence
    if module is None:
        return False, "no evidence from the trusted inspector about the compiled module", rec.axioms
    findings = module_findings(module, strict=True)
    if findings:
        return False, ("the candidate changes how checkers would elaborate or adds what no proof may (rejected "
                       "before its checkers run): " + "; ".join(findings[:5])), rec.axioms
    if rec.sorry_in_type:
        return False, "sorry in the candidate's statement (elaborated)", rec.axioms
    if allow_sorry_proofs:
        sorry_defs = [d.name for d in module.declarations if d.uses_sorry and d.kind != "theorem"]
        if sorry_defs:
            return False, "sorry in a definition the statement may use: " + ", ".join(sorry_defs), rec.axioms
    bad = _bad_axioms(rec.axioms, allowed_axioms, allow_sorry_proofs)
    if bad:
        return False, "axioms: " + ", ".join(bad), rec.axioms
    return True, "compiles; axioms " + (", ".join(rec.axioms) or "none"), rec.axioms


@dataclass
class _Context:
    compiler: Compiler
    files_dir: Path | None
    report_root: Path | None

    def run(self, assembled: assemble.Assembled, label: str, lookups: Sequence[str] = (),
            black_box: Sequence[str] = ()) -> tuple[CompileOutcome, str | None]:
        rel = None
        if self.files_dir is not None:
            self.files_dir.mkdir(parents=True, exist_ok=True)
            path = self.files_dir / (assembled.check.replace(":", "-") + ".lean")
            path.write_text(assembled.text, encoding="utf-8")
            rel = path.relative_to(self.report_root).as_posix() if self.report_root else str(path)
        return self.compiler.compile(assembled.text, label=label, nonce=assembled.nonce, lookups=list(lookups),
                                     black_box=list(black_box)), rel


def _fail_all(shadow_set: ShadowSet, problem: str, submission: str, reason: str, **extra) -> SubmissionReport:
    return SubmissionReport(
        problem=problem, submission=submission, compile=CheckOutcome(check="compile", passed=False, reason=reason),
        scores=score(False, [False] * len(shadow_set.shadows), False), **extra,
    )


def evaluate_submission(
    shadow_set: ShadowSet,
    text: str,
    *,
    submission: str,
    compiler: Compiler,
    candidate: Candidate | None = None,
    allow_sorry_proofs: bool = False,
    allowed_axioms: tuple[str, ...] = DEFAULT_ALLOWED_AXIOMS,
    adapter: AdapterFn | None = None,
    files_dir: Path | None = None,
    report_root: Path | None = None,
    path: str | None = None,
) -> SubmissionReport:
    """Evaluate ``text`` against ``shadow_set`` (module docstring). ``candidate`` overrides the
    last-theorem rule (the gate passes its frozen root). Never raises for a bad submission (its
    report says why it scores 0); raises what the compiler raises (a replay miss)."""
    problem = shadow_set.problem
    label = f"{problem}/{submission}"
    if candidate is None:
        try:
            candidate = extract_candidate(text)
        except NoCandidate as e:
            return _fail_all(shadow_set, problem, submission, str(e), path=path)
    decl = candidate.declaration
    info = CandidateInfo(name=candidate.name, kind=decl.kind, line_start=decl.line_start, line_end=decl.line_end,
                         helpers=len(candidate.helpers), sorry_in_statement=candidate.sorry_in_statement,
                         sorry_in_proof=candidate.sorry_in_proof)
    findings = lint(candidate.kept, allow=frozenset({"import"}))
    blocking = [f for f in findings if f.severity == "error"]
    lint_text = [str(f) for f in findings]
    adaptation = adapt(shadow_set, candidate)
    common = dict(path=path, candidate=info, adaptation=adaptation, lint=lint_text)
    if blocking:
        return _fail_all(shadow_set, problem, submission,
                         "forbidden construct in the submission: " + "; ".join(map(str, blocking)), **common)
    if candidate.sorry_in_statement:
        return _fail_all(shadow_set, problem, submission, "sorry in the candidate's statement", **common)

    ctx = _Context(compiler, files_dir, report_root)
    nonce = new_nonce()
    cfile = assemble.candidate_file(candidate, nonce)
    outcome, rel = ctx.run(cfile, f"{label}/compile", lookups=[candidate.name])
    compiled, reason, info.axioms = judge_candidate(outcome, cfile, candidate.name, allowed_axioms=allowed_axioms,
                                                    allow_sorry_proofs=allow_sorry_proofs)
    compile_check = CheckOutcome(check="compile", passed=compiled, reason=reason, file=rel,
                                 exit_code=outcome.exit_code, duration_s=outcome.duration_s,
                                 origin=outcome.origin, errors=_error_lines(outcome))
    if compiled:  # its checkers may import it now (only a candidate that passed is importable)
        compiler.trust_module(module_name(cfile.text, nonce))
    if compiled and adaptation.unresolved and adapter is not None:  # the model fallback, only when it matters
        adaptation = adapter(shadow_set, candidate, adaptation)
        common["adaptation"] = adaptation
    results: dict[str, CheckOutcome] = {}
    unresolved = [m.reference for m in adaptation.unresolved]
    for check, checker in checkers(shadow_set).items():
        if not compiled:
            results[check] = CheckOutcome(check=check, passed=False, reason="not run: the candidate does not compile")
            continue
        if unresolved:
            results[check] = CheckOutcome(check=check, passed=False,
                                          reason="not run: unresolved reference names " + ", ".join(unresolved))
            continue
        assembled = assemble.checker_file(module_name(cfile.text, nonce), shadow_set.header, check,
                                          rename(checker, adaptation.mapping), new_nonce(), adapter=adaptation.adapter)
        out, rel = ctx.run(assembled, f"{label}/{check}", lookups=[assembled.checker_name],
                           black_box=[candidate.name])
        passed, why = judge(out, assembled, allowed_axioms)
        results[check] = CheckOutcome(check=check, passed=passed, reason=why, file=rel, exit_code=out.exit_code,
                                      duration_s=out.duration_s, origin=out.origin, errors=_error_lines(out))
    forward = [results[f"forward:{s.id}"] for s in shadow_set.shadows]
    backward = results["backward"]
    return SubmissionReport(
        problem=problem, submission=submission, compile=compile_check, forward=forward, backward=backward,
        scores=score(compiled, [f.passed for f in forward], backward.passed), **common,
    )


# -- batch -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Submission:
    problem: str
    name: str
    path: Path


def discover_submissions(directory: Path) -> list[Submission]:
    """``<DIR>/<problem>.lean`` and ``<DIR>/<problem>/*.lean`` (module docstring), sorted.

    Raises ``InputError`` when ``directory`` is not a folder.
    """
    if not directory.is_dir():
        raise InputError(f"{directory}: no such folder of submissions",
                         hint="give --submissions a folder with <problem>.lean or <problem>/<name>.lean files")
    found = [Submission(p.stem, p.stem, p) for p in sorted(directory.glob("*.lean"))]
    for sub in sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith(".")):
        found += [Submission(sub.name, p.stem, p) for p in sorted(sub.glob("*.lean"))]
    return found


class EvalResult(BaseModel):
    format: str = REPORT_FORMAT
    shadows: str
    submissions_dir: str
    compiler: str
    allow_sorry_proofs: bool
    summary: Summary
    reports: list[SubmissionReport]
    missing: list[str] = Field(default_factory=list, description="Problems with a shadow set and no submission")
    skipped: list[str] = Field(default_factory=list, description="Submissions whose problem has no shadow set")
    model_adapted: int = 0
    elapsed_s: float = 0.0


#: Written first into every report folder: marks it as ours, so a later run may replace it (even
#: one a failed run left without summary.json) while any other non-empty folder is refused.
OUT_MARKER = ".fyan-shadow-eval"


def _prepare_out(out_dir: Path) -> None:
    if out_dir.exists():
        if not out_dir.is_dir():
            raise InputError(f"{out_dir}: exists and is not a folder", hint="choose another --out")
        if any(out_dir.iterdir()):
            if not (out_dir / OUT_MARKER).is_file():
                raise InputError(f"{out_dir}: not empty and not an earlier `fyan shadow eval` report",
                                 hint="choose an empty or new folder for --out")
            shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / OUT_MARKER).write_text(REPORT_FORMAT + "\n", encoding="utf-8")


def run_eval(
    shadow_sets: dict[str, ShadowSet],
    shadows_dir: Path,
    submissions_dir: Path,
    out_dir: Path,
    compiler: Compiler,
    *,
    jobs: int = 2,
    allow_sorry_proofs: bool = False,
    allowed_axioms: tuple[str, ...] = DEFAULT_ALLOWED_AXIOMS,
    adapter: AdapterFn | None = None,
) -> EvalResult:
    """Evaluate every submission (``jobs`` at a time) and write the reports to ``out_dir``:
    ``<problem>.json`` (its submissions' reports), ``files/<problem>/<submission>/<check>.lean``
    and ``summary.json``. Raises ``InputError`` for bad folders; a compiler's replay miss
    propagates (nothing half-written is left as a finished report: ``summary.json`` comes last)."""
    start = time.monotonic()
    submissions = discover_submissions(submissions_dir)
    _prepare_out(out_dir)
    skipped = [f"{s.problem}/{s.name}" if s.name != s.problem else s.problem
               for s in submissions if s.problem not in shadow_sets]
    todo = [s for s in submissions if s.problem in shadow_sets]
    have = {s.problem for s in todo}
    missing = sorted(p for p in shadow_sets if p not in have)

    def one(sub: Submission) -> SubmissionReport:
        shadow_set = shadow_sets[sub.problem]
        try:
            text = safefile.read_text(sub.path)
        except (OSError, UnicodeDecodeError) as e:
            return _fail_all(shadow_set, sub.problem, sub.name, f"cannot read {sub.path}: {e}", path=str(sub.path))
        return evaluate_submission(
            shadow_set, text, submission=sub.name, compiler=compiler, allow_sorry_proofs=allow_sorry_proofs,
            allowed_axioms=allowed_axioms, adapter=adapter, files_dir=out_dir / "files" / sub.problem / sub.name,
            report_root=out_dir, path=str(sub.path),
        )

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        reports = list(pool.map(one, todo))
    reports += [_fail_all(shadow_sets[p], p, p, "no submission for this problem", note="missing") for p in missing]
    reports.sort(key=lambda r: (r.problem, r.submission))
    for problem in sorted({r.problem for r in reports}):
        mine = [r for r in reports if r.problem == problem]
        src = find_file(shadows_dir / problem)
        payload = {"format": REPORT_FORMAT, "problem": problem, "shadow_set": str(src) if src else None,
                   "submissions": [r.model_dump(mode="json") for r in mine]}
        (out_dir / f"{problem}.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    result = EvalResult(
        shadows=str(shadows_dir), submissions_dir=str(submissions_dir), compiler=compiler.description,
        allow_sorry_proofs=allow_sorry_proofs, summary=summarize([r.scores for r in reports]), reports=reports,
        missing=missing, skipped=skipped,
        model_adapted=sum(1 for r in reports if r.adaptation and r.adaptation.method != "rules"),
        elapsed_s=round(time.monotonic() - start, 3),
    )
    summary = result.model_dump(mode="json", exclude={"reports"})
    summary["per_submission"] = [
        {"problem": r.problem, "submission": r.submission, **r.scores.model_dump(mode="json")} for r in reports
    ]
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return result
