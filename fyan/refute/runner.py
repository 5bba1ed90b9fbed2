"""Run a ``RefutationProgram`` confined and judge it with Fyan's own programs (``fyan.refute.models``).

``run_refutation(program, workdir=..., limits=...)`` never raises for a bad program; every way a
program can fail to give evidence is a *worthless* outcome with its reason.

Python (``language = "python"``): the run folder ``workdir`` receives Fyan's harness
(``fyan/refute/harness.py``), ``spec.json`` (the domain, enumerated by the harness in order) and
the model's ``predicate.py``; ``python -I -S -B harness.py`` runs through
``fyan.sandbox.runner.run_process`` with ``sandbox="require"`` (bubblewrap: read-only file system
except ``workdir``, no network, every capability dropped, the ``hidden`` folders — the project —
replaced by empty ones), the wall-clock ``limits.timeout_s`` and the address-space limit
``limits.memory_mb``. Without a working bwrap nothing runs: the outcome is worthless and says why
(never unconfined). The harness's verdict is the last ``FYAN-REFUTE <nonce> <json>`` line of its
output, the nonce being a fresh random string only the harness's parent process reads; a line the
program prints cannot carry it. A ``false_at`` verdict names an input *index* of Fyan's own
enumeration; the witness is computed here from it, then a second confined run evaluates the
predicate on that witness alone (a domain of one input, a fresh folder) and must answer ``False``
again. Only then ``refutes`` is True.

Lean (``language = "lean"``): Fyan writes ``Refute.lean``: ``lean_header``, then
``theorem fyan_refutation : Not (<lean_instance>) := by decide`` (in a ``prelude`` file, which has
no tactic framework, the term ``by decide`` produces: ``of_decide_eq_true (Eq.refl true)``), then
``#print axioms fyan_refutation``; the instance text may not contain commands, ``sorry``, ``:=``,
tactic blocks (``by``: a tactic such as ``run_tac`` runs code while elaborating, which could print
a forged message) or trust-the-compiler escapes (``native_decide``, ``ofReduceBool``): with the
header Fyan's own, nothing the compile prints can come from code the program chose, so its
``#print axioms`` answer can be read (docs/lean-contract.md). ``lean --json Refute.lean`` runs
confined in ``workdir`` with the toolchain given (``LeanCheck``). The refutation counts only when
the compile exits 0 with no error and no ``sorry`` warning and ``#print axioms`` names no axiom
beyond Lean's three standard ones. A ``decide`` that reports the proposition is false means the
assertion *holds* at the instance: executed, not refuted. Any other error is worthless (it does
not compile).
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from fyan.lean.diagnostics import parse_lean_json
from fyan.sandbox.runner import Confinement, ProcessResult, confined_environment, run_process
from fyan.refute.models import (RUNNER_VERSION, RefutationLimits, RefutationOutcome, RefutationProgram,
                                Scalar)

#: Fyan's harness, copied into every python run folder
HARNESS = Path(__file__).with_name("harness.py")

#: the axioms a refutation may rest on (Lean's standard ones; ``decide`` itself needs none)
STANDARD_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})

#: words a Lean instance may not contain: commands, proofs, escapes from the kernel's check
_LEAN_FORBIDDEN = re.compile(
    r"(:=|\bsorry\b|\badmit\b|\bnative_decide\b|ofReduceBool|ofReduceNat|\bimplemented_by\b|\bextern\b|"
    r"\bunsafe\b|\baxiom\b|\btheorem\b|\blemma\b|\bexample\b|\bdef\b|\binstance\b|\bmacro\b|\bsyntax\b|"
    r"\belab\b|\bmacro_rules\b|\bset_option\b|\battribute\b|@\[|#|\bimport\b|\bopen\b|\bnamespace\b|\bend\b|"
    r"\bsection\b|\bvariable\b|\bprelude\b|\bdecreasing_by\b|\btermination_by\b|\bwhere\b|\bby\b|\brun_\w+|"
    r"\beval\b|\bIO\b)")

#: Lean's ``decide`` reporting that the proposition it was given is false (docs/lean-contract.md)
_DECIDE_FALSE = re.compile(r"decide.{0,2} proved that the proposition", re.IGNORECASE)
#: the kernel-checked term of a ``prelude`` check not evaluating to ``true`` (the elaborator cannot
#: tell a false proposition from a stuck evaluation there; docs/lean-contract.md)
_TERM_NOT_TRUE = re.compile(r"mismatch[\s\S]*of_decide_eq_true \(Eq\.refl (?:Bool\.)?true\)", re.IGNORECASE)
#: ``#print axioms`` answers (docs/lean-contract.md)
_NO_AXIOMS = re.compile(r"'fyan_refutation' does not depend on any axioms")
_AXIOMS = re.compile(r"'fyan_refutation' depends on axioms: \[([^\]]*)\]")


@dataclass(frozen=True)
class LeanCheck:
    """The toolchain a Lean check compiles with: the real ``lean`` binary, the variables it
    needs (``LEAN_PATH``, ``LEAN_SYSROOT``: ``fyan.lean.compile.LeanSetup.environment``) and the
    folders it must read (``LeanSetup.readable``)."""

    lean: Path
    env: dict[str, str] = field(default_factory=dict)
    readable: tuple[Path, ...] = ()


def _bounded(text: str, limit: int) -> str:
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return text
    return data[: limit // 2].decode("utf-8", "ignore") + "\n… (output cut) …\n" + \
        data[-limit // 2:].decode("utf-8", "ignore")


def _outcome(program: RefutationProgram, limits: RefutationLimits, **kw) -> RefutationOutcome:
    kw["stdout"] = _bounded(kw.get("stdout", ""), limits.output_bytes)
    kw["stderr"] = _bounded(kw.get("stderr", ""), limits.output_bytes)
    kw["duration_s"] = round(kw.get("duration_s", 0.0), 3)
    return RefutationOutcome(program_sha256=program.sha256(), runner_version=RUNNER_VERSION,
                             target=program.target, language=program.language, **kw)


def _fresh(folder: Path) -> Path:
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def _verdict(proc: ProcessResult, nonce: str) -> dict | None:
    marker = f"FYAN-REFUTE {nonce} "
    found = None
    for line in proc.output.splitlines():
        if line.startswith(marker):
            try:
                found = json.loads(line[len(marker):])
            except json.JSONDecodeError:
                found = None
    return found


def _program_output(proc: ProcessResult, nonce: str) -> str:
    return "\n".join(line for line in proc.output.splitlines() if not line.startswith(f"FYAN-REFUTE {nonce} ")).strip()


def _run_harness(program: RefutationProgram, variables: list[tuple[str, list[Scalar]]], folder: Path,
                 limits: RefutationLimits, hidden: tuple[Path, ...]) -> tuple[ProcessResult, dict | None, str]:
    """One confined run of the harness in ``folder`` over ``variables``: (process, verdict or
    None, what the program printed)."""
    _fresh(folder)
    shutil.copyfile(HARNESS, folder / "harness.py")
    (folder / "spec.json").write_text(json.dumps({"variables": variables}), encoding="utf-8")
    (folder / "predicate.py").write_text(program.predicate_source or "", encoding="utf-8")
    nonce = secrets.token_hex(16)
    confinement = Confinement(writable=(folder,), hidden=hidden)
    proc = run_process([sys.executable, "-I", "-S", "-B", "harness.py"], cwd=folder, timeout_s=limits.timeout_s,
                       memory_mb=limits.memory_mb, sandbox="require", confinement=confinement,
                       env=confined_environment(extra={"PYTHONHASHSEED": "0"}), stdin_text=nonce + "\n",
                       log_path=folder / "run.log")
    return proc, _verdict(proc, nonce), _program_output(proc, nonce)


def _not_run(proc: ProcessResult) -> str | None:
    """Why a confined run gave no evidence whatever the program did (no sandbox, timeout), or None."""
    if proc.refused:
        return f"not run: no sandbox ({proc.note})"
    if proc.timed_out:
        return "hangs: killed at the timeout" + (f" ({proc.note.split(';')[0]})" if proc.note else "")
    if proc.memory_exceeded:
        return f"ran out of memory ({proc.note})"
    if proc.exit_code is None:
        return f"did not run: {proc.note}"
    return None


_VERDICT_REASONS = {
    "syntax": "does not execute (it does not compile: {detail})",
    "load": "does not execute (loading it failed: {detail})",
    "raised": "the predicate raised at input {index}: {detail}",
    "non_bool": "the predicate returned {detail}, not a bool, at input {index}",
    "no_verdict": "gave no verdict: {detail}",
}


def _python(program: RefutationProgram, workdir: Path, limits: RefutationLimits,
            hidden: tuple[Path, ...]) -> RefutationOutcome:
    cases = program.cases()
    if cases > limits.max_cases:
        return _outcome(program, limits, executed=False, refutes=False,
                        worthless_reason=f"the domain holds {cases} inputs, more than the limit of {limits.max_cases}")
    variables = [(v.name, v.listed()) for v in program.domain]
    started = time.monotonic()
    proc, verdict, printed = _run_harness(program, variables, workdir / "search", limits, hidden)
    common = {"stdout": printed, "exit_code": proc.exit_code, "sandbox": proc.note}

    def worthless(reason: str, **more) -> RefutationOutcome:
        return _outcome(program, limits, executed=False, refutes=False, worthless_reason=reason,
                        duration_s=time.monotonic() - started, **{**common, **more})

    why = _not_run(proc)
    if why:
        return worthless(why)
    if verdict is None:
        return worthless(f"gave no verdict (exit code {proc.exit_code})")
    kind = verdict.get("verdict")
    if kind == "violation":
        what = {"write": "writes outside its folder", "network": "tries the network",
                "process": "tries to start a process or load native code"}.get(verdict.get("kind"), "forbidden action")
        return worthless(f"{what}: {verdict.get('detail', '')}".strip())
    if kind in _VERDICT_REASONS:
        return worthless(_VERDICT_REASONS[kind].format(detail=verdict.get("detail", ""), index=verdict.get("index")))
    if kind == "holds":
        checked = verdict.get("checked")
        if checked != cases:
            return worthless(f"answered for {checked} of {cases} inputs")
        return _outcome(program, limits, executed=True, refutes=False, cases_checked=cases,
                        duration_s=time.monotonic() - started, **common)
    index = verdict.get("index")
    if kind != "false_at" or not isinstance(index, int) or not 0 <= index < cases:
        return worthless(f"gave an unreadable verdict {verdict!r}")
    witness = _nth(variables, index)
    # the second run: the predicate on the witness alone, in a fresh folder
    again, second, printed2 = _run_harness(program, [(k, [v]) for k, v in witness.items()], workdir / "recheck",
                                           limits, hidden)
    more = {"stdout": (printed + "\n--- re-check ---\n" + printed2).strip(), "witness": witness,
            "exit_code": again.exit_code}
    why = _not_run(again)
    if why:
        return worthless(f"re-check on {witness}: {why}", **more)
    if second is None or second.get("verdict") != "false_at" or second.get("index") != 0:
        said = (second or {}).get("verdict", "no verdict")
        return worthless(f"claims a counterexample the re-check does not confirm: on {witness} the re-check "
                         f"answered {said!r}", **more)
    return _outcome(program, limits, executed=True, refutes=True, cases_checked=index + 1,
                    duration_s=time.monotonic() - started, **{**common, **more})


def _nth(variables: list[tuple[str, list[Scalar]]], index: int) -> dict[str, Scalar]:
    """The ``index``-th input of the product of the value lists (last variable fastest, as
    ``itertools.product`` in the harness)."""
    values: dict[str, Scalar] = {}
    for name, listed in reversed(variables):
        index, at = divmod(index, len(listed))
        values[name] = listed[at]
    return {name: values[name] for name, _ in variables}


def lean_check_text(program: RefutationProgram) -> str:
    """The file Fyan compiles for a lean program (module docstring)."""
    header = program.lean_header.strip()
    prelude = header.startswith("prelude")
    proof = "of_decide_eq_true (Eq.refl true)" if prelude else "by decide"
    instance = (program.lean_instance or "").strip()
    return (f"{header}\n\n" if header else "") + \
        f"theorem fyan_refutation : Not ({instance}) := {proof}\n\n#print axioms fyan_refutation\n"


def _lean(program: RefutationProgram, workdir: Path, limits: RefutationLimits, lean: LeanCheck | None,
          hidden: tuple[Path, ...]) -> RefutationOutcome:
    instance = program.lean_instance or ""
    bad = _LEAN_FORBIDDEN.search(instance)
    if bad:
        return _outcome(program, limits, executed=False, refutes=False,
                        worthless_reason=f"the Lean instance contains {bad.group(0)!r}: an instance is one "
                                         "proposition, with no command, proof or escape from the kernel's check")
    if instance.count("(") != instance.count(")") or instance.count("[") != instance.count("]"):
        return _outcome(program, limits, executed=False, refutes=False,
                        worthless_reason="the Lean instance's brackets do not balance")
    if lean is None:
        return _outcome(program, limits, executed=False, refutes=False,
                        worthless_reason="not run: no Lean toolchain was given for the check")
    folder = _fresh(workdir / "lean")
    text = lean_check_text(program)
    (folder / "Refute.lean").write_text(text, encoding="utf-8")
    confinement = Confinement(writable=(folder,), read_only=tuple(lean.readable), hidden=hidden)
    proc = run_process([str(lean.lean), "--json", "Refute.lean"], cwd=folder, timeout_s=limits.timeout_s,
                       memory_mb=limits.lean_memory_mb, sandbox="require", confinement=confinement,
                       env=confined_environment(extra=dict(lean.env)), log_path=folder / "compile.log")
    common = {"stdout": proc.output, "exit_code": proc.exit_code, "sandbox": proc.note, "witness": instance,
              "duration_s": proc.duration_s}
    why = _not_run(proc)
    if why:
        return _outcome(program, limits, executed=False, refutes=False, worthless_reason=why, **common)
    parsed = parse_lean_json(proc.output)
    errors = [d for d in parsed.diagnostics if d.severity == "error"]
    if errors:
        if any(_DECIDE_FALSE.search(d.text) for d in errors):
            return _outcome(program, limits, executed=True, refutes=False, cases_checked=1, **common)
        if any(_TERM_NOT_TRUE.search(d.text) for d in errors):
            return _outcome(program, limits, executed=False, refutes=False,
                            worthless_reason="the decision procedure did not evaluate to true (the negation is "
                                             "false at this instance, or its evaluation is stuck)", **common)
        return _outcome(program, limits, executed=False, refutes=False,
                        worthless_reason=f"the check does not compile: {errors[0].text.splitlines()[0][:300]}",
                        **common)
    if any(d.is_sorry for d in parsed.diagnostics):
        return _outcome(program, limits, executed=False, refutes=False,
                        worthless_reason="the check uses sorry", **common)
    if proc.exit_code != 0:
        return _outcome(program, limits, executed=False, refutes=False,
                        worthless_reason=f"lean exited with {proc.exit_code} and no error message", **common)
    infos = " ".join(d.text for d in parsed.diagnostics)
    used = _AXIOMS.search(infos)
    if used:
        axioms = {a.strip() for a in used.group(1).split(",") if a.strip()}
        if not axioms <= STANDARD_AXIOMS:
            return _outcome(program, limits, executed=False, refutes=False,
                            worthless_reason=f"the check rests on axioms {sorted(axioms - STANDARD_AXIOMS)}",
                            **common)
    elif not _NO_AXIOMS.search(infos):
        return _outcome(program, limits, executed=False, refutes=False,
                        worthless_reason="#print axioms gave no answer for fyan_refutation", **common)
    return _outcome(program, limits, executed=True, refutes=True, cases_checked=1, **common)


def run_refutation(program: RefutationProgram, *, workdir: Path, limits: RefutationLimits | None = None,
                   lean: LeanCheck | None = None, hidden: tuple[Path, ...] = ()) -> RefutationOutcome:
    """Run ``program`` confined in ``workdir`` (created; its previous runs replaced) and judge it
    (module docstring). ``limits`` bound each run; ``lean`` is the toolchain of a lean check;
    ``hidden`` are folders the program must not see (the project folder: the state store,
    other units). The program's files and logs stay in ``workdir`` as the attempt's artifacts."""
    limits = limits or RefutationLimits()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "program.json").write_text(program.model_dump_json(indent=2), encoding="utf-8")
    if program.language == "python":
        outcome = _python(program, workdir, limits, hidden)
    else:
        outcome = _lean(program, workdir, limits, lean, hidden)
    (workdir / "outcome.json").write_text(outcome.model_dump_json(indent=2), encoding="utf-8")
    return outcome
