"""``fyan selftest``: the gate proves itself on the user's own toolchain.

For a toolchain pin, in a scratch folder: find the toolchain (``fyan.lean.toolchain.discover``,
the ``[lean]`` settings of this machine: ``FYAN_LEAN__*``), build the trusted inspector for the
pin (``fyan.lean.inspector.ensure_inspector``), compile Fyan's honest control modules and hold
them to the gate's policy by effect, listing the toolchain's extensions no row classifies
(``fyan.trust.learn``), then run every case
of the cheat corpus
(``fyan.trust.corpus``: the honest controls and every cheat) through the real completion gate
on the two-unit project of ``fyan.selftest.harness`` (a scratch Lake package; no Mathlib), and
judge each report against the manifest. The selftest passes only when every cheat is rejected by
its intended check and every control passes; its result is kept in the user's data folder
(``fyan.trust.record``), which is what the gate trusts.

The scratch projects opt out of the trust check (``[lean] trust_without_selftest = true``): the
selftest is what establishes trust, so it cannot require it.

``record_dir`` (``--record DIR``) keeps the raw output of every case for the test suite:
``DIR/<lean version>/toolchain.json`` (the toolchain, pin, Fyan version, date, and each case's
expected and observed checks), and per case ``<case>.lean-build.txt`` (the ``lean --json``
compile of the candidate), ``<case>.inspector.json`` (the inspector's report) and, when a kernel checker ran,
``<case>.kernel-replay.txt``; each text file starts with a ``SOURCE:`` line naming the case and
the toolchain, like ``tests/fixtures/lean-samples/``. ``tests/test_selftest.py`` replays every
recorded version found under ``tests/fixtures/lean-recorded/``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fyan.trust import corpus, record as trust
from fyan.trust.corpus import Case


@dataclass
class CaseResult:
    id: str
    kind: str
    expected: str  # the intended check (a cheat) or "passes" (a control)
    caught_by: list[str]
    ok: bool
    problems: list[str]
    duration_s: float

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "expected": self.expected, "caught_by": self.caught_by,
                "ok": self.ok, "problems": self.problems, "duration_s": self.duration_s}


@dataclass
class SelftestResult:
    """``passed`` only when every case is as the manifest asks; ``problem`` says why the cases could
    not run at all (no toolchain, no inspector); ``record_file`` where the result was kept."""

    pin: str
    toolchain: str | None = None
    key: str | None = None
    inspector_sha256: str | None = None
    cases: list[CaseResult] = field(default_factory=list)
    problem: str | None = None
    record_file: str | None = None
    record_dir: str | None = None
    date: str = field(default_factory=trust.now_iso)

    #: only some cases ran (``run_selftest(only=...)``): never a pass, never kept unless a case failed
    partial: bool = False
    #: the extensions Fyan's honest controls wrote on this toolchain (``fyan.trust.learn``)
    learned_extensions: list[str] = field(default_factory=list)
    #: extensions of the toolchain and the dependencies no row of the policy classifies
    unclassified_extensions: list[str] = field(default_factory=list)
    #: why the toolchain's extensions could not be listed (None: listed)
    registry_problem: str | None = None
    #: the Mathlib controls compiled in the project's package and admitted (empty: none asked)
    library_controls: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.problem is None and bool(self.cases) and all(c.ok for c in self.cases) and not self.partial

    @property
    def failed(self) -> list[CaseResult]:
        return [c for c in self.cases if not c.ok]

    def record(self) -> dict[str, Any]:
        """The JSON kept in the data folder (``fyan.trust.record``)."""
        return {"format": trust.FORMAT, "key": self.key, "passed": self.passed, "toolchain": self.toolchain,
                "pin": self.pin, "inspector_sha256": self.inspector_sha256, "date": self.date,
                **trust.current_identity(), "learned_extensions": self.learned_extensions,
                "unclassified_extensions": self.unclassified_extensions,
                "cases": [c.as_dict() for c in self.cases]}

    def payload(self) -> dict[str, Any]:
        from fyan.lean.mathlib import affected_by

        return {**self.record(), "problem": self.problem, "record_file": self.record_file,
                "record_dir": self.record_dir, "failed": [c.id for c in self.failed],
                "kernel_bugs": [b.issue for b in affected_by(self.key)] if self.key else None}


#: ``[lean]`` settings of a project that its selftest uses too (how to find and run Lean)
PROJECT_SETTINGS = {"lake", "build_timeout", "memory_limit_mb", "sandbox", "sandbox_readable", "inspector_dir",
                    "comparator"}

#: called after a case's project is set up and before its gate runs (the tests' toolchain double
#: takes its scenario here: what a real Lean prints beyond what the double derives)
BeforeCase = Callable[[Case, Any], None]


def run_selftest(pin: str | None = None, *, work_dir: Path | None = None, record_dir: Path | None = None,
                 before_case: BeforeCase | None = None, save: bool = True,
                 on_case: Callable[[CaseResult], None] | None = None,
                 only: Collection[str] | None = None, lean: Any = None,
                 package: Path | None = None) -> SelftestResult:
    """Run the selftest for ``pin`` (default: ``[lean] toolchain``) as the module docstring says.

    ``work_dir``: the scratch folder (default: a temporary one, removed afterwards); ``save``:
    keep the result in the data folder (only when the cases ran); ``only``: run just these case ids
    (for tests: such a partial run never passes, and is kept only when a case failed); ``lean``: the
    ``[lean]`` settings to use (a project's ``LeanSection``: its ``lake``, timeouts, sandbox; default
    this machine's ``FYAN_LEAN__*``); ``package``: the project's Lake package (``lean/``), where the
    toolchain's and the dependencies' extensions are listed and, when it requires Mathlib, the
    Mathlib controls are compiled (``fyan.trust.learn``). Never raises for a toolchain
    problem or a case that crashes the gate (that case fails, named); ``OSError`` when the data
    folder or ``record_dir`` cannot be written."""
    from fyan.config import FyanConfig
    from fyan.lean.inspector import ensure_inspector
    from fyan.lean.toolchain import discover, pin_version, versions_match

    cfg = lean if lean is not None else FyanConfig(project={"name": "selftest", "source": "-"}).lean
    if pin:
        cfg = cfg.model_copy(update={"toolchain": pin})
    result = SelftestResult(pin=cfg.toolchain)
    scratch = Path(tempfile.mkdtemp(prefix="fyan-selftest-")) if work_dir is None else work_dir
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        # asked from a folder pinning the toolchain, elan runs the pinned one (as the gate asks
        # from the project's Lake package), not the user's default
        pinned = scratch / "pinned"
        pinned.mkdir(exist_ok=True)
        (pinned / "lean-toolchain").write_text(cfg.toolchain.strip() + "\n", encoding="utf-8")
        disc = discover(cfg, cwd=pinned)
        if disc.toolchain is None:
            result.problem = disc.problem or "Lean toolchain not found"
            return result
        tc = disc.toolchain
        result.toolchain, result.key = tc.version, trust.toolchain_key(tc)
        wanted = pin_version(cfg.toolchain)
        if wanted is None or tc.lean_version is None or not versions_match(wanted, tc.lean_version):
            result.problem = (f"`lake --version` reports {tc.version!r}, not the pinned {cfg.toolchain}; install it "
                              f"(elan toolchain install {cfg.toolchain}) or pass the pin you use (--toolchain)")
            return result
        inspector, why = ensure_inspector(tc, cfg.toolchain, cfg, scratch)
        if inspector is None:
            result.problem = f"the trusted inspector could not be built: {why}"
            return result
        result.inspector_sha256 = inspector.sha256
        out = None
        if record_dir is not None:
            out = record_dir / result.key
            out.mkdir(parents=True, exist_ok=True)
            result.record_dir = str(out)
        result.partial = only is not None
        # first: Fyan's honest controls must pass the gate's policy on this toolchain
        from fyan.trust.learn import learn_extensions

        learned = learn_extensions(tc, cfg.toolchain, cfg, inspector, scratch / "learn", scratch / "learn-logs",
                                   package=package)
        if learned.problem is not None:
            result.problem = f"Fyan's honest controls do not pass on this toolchain: {learned.problem}"
            return result
        result.learned_extensions = learned.extensions
        result.library_controls = learned.library_modules
        result.unclassified_extensions = learned.unclassified_registered
        result.registry_problem = learned.registry_problem
        if out is not None:
            (out / "learned-extensions.json").write_text(json.dumps(learned.by_module, indent=2) + "\n",
                                                         encoding="utf-8")
        # a project's own [lean] settings reach the scratch projects (the env's FYAN_LEAN__* win, as everywhere);
        # the cases' gate applies the policy by effect with the configured allow-list
        settings = cfg.model_dump(include=PROJECT_SETTINGS, exclude_defaults=True) if lean is not None else {}
        settings["extension_allowlist"] = sorted(cfg.extension_allowlist)
        for case in [c for c in corpus.cases() if only is None or c.id in only]:
            res = run_case(case, cfg.toolchain, scratch / "cases" / case.id, before_case=before_case, out=out,
                           settings=settings,
                           version=tc.version)
            result.cases.append(res)
            if on_case is not None:
                on_case(res)
        if out is not None:
            (out / "toolchain.json").write_text(json.dumps(result.record(), indent=2) + "\n", encoding="utf-8")
        if save and (not result.partial or result.failed):
            result.record_file = str(trust.save_record(result.record()))
        return result
    finally:
        if work_dir is None:
            from fyan.lean.inspector import remove_tree

            remove_tree(scratch)


def run_case(case: Case, pin: str, folder: Path, *, before_case: BeforeCase | None = None, out: Path | None = None,
             version: str = "", settings: dict[str, Any] | None = None) -> CaseResult:
    """One case through the real completion gate in ``folder`` (its project and gate logs), judged
    against the manifest (``corpus.judge``; a kernel checker's extra expectations apply when one
    ran). ``pytest -m lean`` (``tests/test_cheats.py``) calls exactly this."""
    from fyan.selftest import harness

    expected = case.caught_by or "passes"
    start = time.monotonic()
    setup = None
    try:
        setup = harness.setup(folder / "project", case.text, bridge=case.setup == "bridge", meta=case.setup == "meta",
                              lean={**(settings or {}), "toolchain": pin, "trust_without_selftest": True})
        if before_case is not None:
            before_case(case, setup)
        logs = folder / "logs"
        report = setup.gate(log_dir=logs)
        kernel = report.check("kernel_replay").status != "unavailable"
        verdict = corpus.judge(case, report, kernel_checker=kernel)
        if out is not None:
            _keep_raw(case, logs, out, version)
        return CaseResult(case.id, case.kind, expected, verdict.caught_by, verdict.ok, verdict.problems,
                          round(time.monotonic() - start, 3))
    except Exception as e:  # a crash of the gate on this case is a failed case, named
        return CaseResult(case.id, case.kind, expected, [], False, [f"the gate could not run: {type(e).__name__}: {e}"],
                          round(time.monotonic() - start, 3))
    finally:
        if setup is not None:
            setup.gateway.close()


def _log_output(log: Path) -> tuple[str, int | None] | None:
    """(the process output, its exit code) of a runner log (``<name>.log`` + ``.log.json``)."""
    meta = log.with_name(log.name + ".json")
    if not log.is_file():
        return None
    try:
        info = json.loads(meta.read_text(encoding="utf-8")) if meta.is_file() else {}
    except ValueError:
        info = {}
    text = log.read_text(encoding="utf-8", errors="replace")
    # the runner's header (fyan.sandbox.runner): "$ <argv>", "# cwd: …", "# exit: …" — not Lean's output
    lines = text.split("\n")
    while lines and lines[0].startswith(("$ ", "# cwd: ", "# exit: ", "# note: ")):
        lines.pop(0)
    return "\n".join(lines), info.get("exit_code")


def _keep_raw(case: Case, logs: Path, out: Path, version: str) -> None:
    head = f"SOURCE: fyan selftest --record, case {case.id} ({case.file}); toolchain {version}"
    build = _log_output(logs / "build.log")
    if build is not None:
        text, code = build
        (out / f"{case.id}.lean-build.txt").write_text(f"{head}; exit {code}\n{text}", encoding="utf-8")
    reports = sorted(logs.rglob("inspect*.json"))
    report = next((p for p in reports if not p.name.endswith(".log.json")), None)
    if report is not None:
        shutil.copyfile(report, out / f"{case.id}.inspector.json")
    replay = _log_output(logs / "kernel-replay.log")
    if replay is not None:
        text, code = replay
        (out / f"{case.id}.kernel-replay.txt").write_text(f"{head}; exit {code}\n{text}", encoding="utf-8")


def kernel_soundness_line(lean_version: str | None) -> str:
    """What the selftest cannot show and the table of known bugs does: whether this Lean's kernel
    has a known soundness bug (``fyan.lean.mathlib.KERNEL_BUGS``, each with its fix), and so
    whether the gate needs an independent kernel (comparator with nanoda) to complete a unit."""
    from fyan.gates.completion import find_nanoda
    from fyan.lean.mathlib import affected_by, bug_text

    bugs = affected_by(lean_version)
    if not bugs:
        return f"kernel: Lean {lean_version} has none of the known kernel soundness bugs"
    return (f"kernel: Lean {lean_version or '(version unknown)'} has known kernel soundness bugs the cheats above "
            f"cannot show: {bug_text(bugs)}; the gate completes a unit on it only after comparator re-checked it "
            "with the nanoda kernel" + (" (nanoda_bin found)" if find_nanoda() else " (nanoda_bin NOT found: no unit "
                                        "completes; upgrade the toolchain)"))


def render(result: SelftestResult) -> str:
    """The table ``fyan selftest`` prints: case, check expected to catch it, checks that did, verdict."""
    lines = [f"fyan selftest for {result.pin}: toolchain {result.toolchain or 'none'}"]
    if result.inspector_sha256:
        lines.append(f"  inspector sha256 {result.inspector_sha256[:16]}…")
    if result.problem:
        lines.append(f"  cannot run: {result.problem}")
        return "\n".join(lines + ["SELFTEST NOT PASSED: the gate does not trust this toolchain."])
    w = max([len(c.id) for c in result.cases] + [4])
    lines.append(f"  {'case'.ljust(w)}  {'expected'.ljust(22)}  {'caught by'.ljust(34)}  verdict")
    for c in result.cases:
        caught = (", ".join(c.caught_by[:2]) + (f" +{len(c.caught_by) - 2}" if len(c.caught_by) > 2 else "")
                  if c.caught_by else ("-" if c.kind == "control" else "NOTHING"))
        lines.append(f"  {c.id.ljust(w)}  {c.expected.ljust(22)}  {caught.ljust(34)}  {'ok' if c.ok else 'WRONG'}")
        for p in c.problems:
            lines.append(f"  {''.ljust(w)}    {p}")
    cheats = sum(c.kind == "cheat" for c in result.cases)
    controls = len(result.cases) - cheats
    lines += extension_lines(result)
    if result.record_dir:
        lines.append(f"  raw Lake and Lean output recorded in {result.record_dir}")
    lines.append("  " + kernel_soundness_line(result.key))
    if result.passed:
        lines.append(f"SELFTEST PASSED: {cheats} cheats rejected by their intended checks, {controls} honest controls "
                     f"passed; the gate trusts {result.toolchain}" + (f" (kept in {result.record_file})"
                                                                      if result.record_file else ""))
    else:
        lines.append(f"SELFTEST FAILED: {', '.join(c.id for c in result.failed)} not as intended; the gate does not "
                     "trust this toolchain (report the table above to the Fyan developers)")
    return "\n".join(lines)


def extension_lines(result: SelftestResult) -> list[str]:
    """What the selftest says about the policy's coverage of this toolchain: the extensions of the
    toolchain and of the project's dependencies that no row of the policy classifies (a unit that
    writes one is refused, named, until ``[lean] extension_allowlist`` admits it), or why they could
    not be listed."""
    from fyan.lean.extensions import registering_module

    lines = []
    if result.library_controls:
        lines.append(f"  Mathlib controls compiled in the project's package and admitted by the policy: "
                     f"{', '.join(result.library_controls)}")
    if result.registry_problem:
        return [*lines, f"  extensions of this toolchain not listed: {result.registry_problem}"]
    if not result.unclassified_extensions:
        return [*lines, "  every environment extension of this toolchain and its dependencies is classified by Fyan's "
                        "policy"]
    lines += [f"  {len(result.unclassified_extensions)} environment extension(s) no row of Fyan's policy classifies "
             "(a unit writing one is refused; check what it does, then name it in [lean] extension_allowlist):"]
    lines += [f"    {n} (registered in {registering_module(n)})" for n in result.unclassified_extensions]
    return lines
