"""A two-unit project driven up to the completion gate with hand-written Lean: the stage on which
``fyan selftest`` and the gate tests (``tests/gate_harness.py`` re-exports this module) run the
cheat corpus through the real completion gate.

Units: ``def-double`` (``def double (n : Int) : Int := 2 * n``) and ``thm-root``, whose root
``double_even (n : Int) : ∃ k, double n = 2 * k`` depends on it (optionally with a bridge
obligation ``double_even_faithful``). The model-driven stages are stood in for by checks that
accept the given files (their real checks are tested elsewhere), except:

* the audit check freezes with the real ``fyan.lakepackage.signatures.freeze_specs`` (using whatever
  toolchain is configured: the test double in CI, a real ``lake`` in ``lean``-marked tests);
* ``def-double`` passes the real completion gate (``check_gate``) to become complete.

``thm-root`` stops after its prove stage with the candidate ``Basic.lean`` recorded; tests then
run the gate on it (``Setup.gate``), with a toolchain-double scenario when they want one.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fyan.audit.record import AuditResult, BridgeResult
from fyan.gates.completion import run_gate
from fyan.models.gate_report import GateReport
from fyan.gates.stages import check_gate
from fyan.lean import declarations
from fyan.lakepackage.package import render_unit_file, unit_namespace
from fyan.lakepackage.signatures import freeze_specs
from fyan.lean.toolchain import Discovery
from fyan.project import Project
from fyan.stages import stage_spec
from fyan.state.gateway import CheckOutcome, Gateway
from fyan.state.models import RunStatus, Stage
from fyan.state.store import Store
from fyan.specifier.ingest import ingest

TEX = r"""\begin{definition}\label{def:double} The \textbf{double} of an integer $n$ is $2n$.\end{definition}
\begin{theorem}\label{thm:root} The double of every integer is even.\end{theorem}
"""
LIB = "Cheats"
DEF_BODY = "def double (n : Int) : Int := 2 * n"
ROOT = "double_even"
BRIDGE = "double_even_faithful"
ROOT_STATEMENT = "theorem double_even (n : Int) : ∃ k, double n = 2 * k := by\n  sorry"
BRIDGE_STATEMENT = ("theorem double_even_faithful : (∀ n : Int, ∃ k, double n = 2 * k) → "
                    "∀ n : Int, ∃ k, 2 * n = 2 * k := by\n  sorry")
HONEST = "theorem double_even (n : Int) : ∃ k, double n = 2 * k := ⟨n, rfl⟩"
HONEST_BRIDGE = HONEST + ("\n\ntheorem double_even_faithful : (∀ n : Int, ∃ k, double n = 2 * k) → "
                          "∀ n : Int, ∃ k, 2 * n = 2 * k :=\n  fun h n => h n")
ATTEMPTS = 3


@dataclass
class Setup:
    project: Project
    gateway: Gateway
    unit_id: str = "thm-root"

    @property
    def store(self) -> Store:
        return self.gateway.store

    @property
    def ns(self) -> str:
        return f"{LIB}.ThmRoot"

    @property
    def basic(self) -> Path:
        return self.project.paths.unit(self.unit_id) / "Basic.lean"

    def gate(self, scenario: dict | None = None, fake=None, log_dir: Path | None = None) -> GateReport:
        """Run the completion gate on ``thm-root`` (with ``scenario`` for the toolchain double)."""
        if fake is not None:
            if scenario is not None:
                fake.scenario(scenario)
            else:
                os.environ.pop("FYAN_FAKE_SCENARIO", None)
        unit = self.store.unit(self.unit_id)
        return run_gate(self.project, self.store, unit, log_dir or (self.project.paths.root / "gate-logs"))


def _write(project: Project, run, files: dict[str, str]) -> None:
    for rel in stage_spec(run.stage).outputs:
        path = project.paths.root / run.attempt_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files.get(rel, f"{rel} (written by the test harness)\n"), encoding="utf-8")


def _accept(ctx):
    return CheckOutcome(True, "accepted by the test harness")


def _audit(plan: dict[str, tuple[list[str], list[str]]], without_toolchain: set[str],
           audited_bridge: str = BRIDGE_STATEMENT, audited_grade: int = 3):
    def check(ctx):
        roots, bridges = plan[ctx.unit.id]
        statement = (ctx.project.paths.unit(ctx.unit.id) / "Statement.lean").read_text(encoding="utf-8")
        ns = unit_namespace(ctx.project, ctx.unit)
        scanned = declarations.scan(statement)

        def pick(names):
            return {f"{ns}.{n}": declarations.find(scanned, f"{ns}.{n}") for n in names}

        disc = Discovery(None, "no toolchain at freeze time (test)", ()) if ctx.unit.id in without_toolchain else None
        specs, note, _ = freeze_specs(ctx.project, ctx.store, ctx.unit, statement, pick(roots), ctx.attempt_dir,
                                      discovery=disc)
        if bridges:
            more, _, _ = freeze_specs(ctx.project, ctx.store, ctx.unit, statement, pick(bridges), ctx.attempt_dir,
                                   role="bridge", discovery=disc)
            specs += more
        if bridges:  # a grade-1 statement routed to a bridge whose S0 passed its own audit
            s0 = AuditResult(valid=True, grade=3, threshold=2, routing="freeze", root=f"{ns}.{bridges[0]}")
            bridge = BridgeResult(name=f"{ns}.{bridges[0]}", lean=audited_bridge, result=s0)
            result = AuditResult(valid=True, grade=1, threshold=2, routing="bridge", root=f"{ns}.{roots[0]}",
                                 bridge=bridge)
        else:
            grade = audited_grade if ctx.unit.id == "thm-root" else 3
            result = AuditResult(valid=True, grade=grade, threshold=2, routing="freeze", root=f"{ns}.{roots[0]}")
        return CheckOutcome(True, f"frozen by the test harness ({note})", freezes=specs,
                            derived={"audit/result.json": result.model_dump_json(indent=2).encode()})

    return check


def _drive(project: Project, gw: Gateway, unit_id: str, statement: str, basic: str, stages,
           lemma_dag: str = "{}\n") -> None:
    unit = gw.store.unit(unit_id)
    files = {
        Stage.PLAN: {"Statement.lean": render_unit_file(project, gw.store, unit, statement, "Statement"),
                     "lemma_dag.json": lemma_dag},
        Stage.PROVE: {"Basic.lean": render_unit_file(project, gw.store, unit, basic, "Basic")},
    }
    for stage in stages:
        run = gw.begin(unit_id, stage, ATTEMPTS)
        _write(project, run, files.get(stage, {}))
        done = gw.finish(run)
        assert done.status is RunStatus.SUCCEEDED, f"{unit_id} {stage.value}: {done.reason}"


_SNAPSHOTS: dict[tuple, Path] = {}
_SNAPSHOT_ROOT = Path(tempfile.mkdtemp(prefix="fyan-gate-harness-"))
atexit.register(shutil.rmtree, _SNAPSHOT_ROOT, ignore_errors=True)


def _checks(plan, freeze_without_toolchain: bool, audited_bridge: str = BRIDGE_STATEMENT, audited_grade: int = 3):
    return {Stage.REASON: _accept, Stage.PLAN: _accept, Stage.PROVE: _accept, Stage.GATE: check_gate,
            Stage.AUDIT: _audit(plan, {"thm-root"} if freeze_without_toolchain else set(), audited_bridge,
                                audited_grade)}


def _ingested(root: Path, checks, extra_toml: str) -> tuple[Project, Gateway]:
    (root / "source").mkdir(parents=True, exist_ok=True)
    (root / "source" / "doc.tex").write_text(TEX, encoding="utf-8")
    (root / "fyan.toml").write_text(f'[project]\nname = "t"\nsource = "source/doc.tex"\n{extra_toml}', encoding="utf-8")
    project = Project.open(root)
    gateway = Gateway(project, checks)
    ingest(project, gateway)
    return project, gateway


def setup(root: Path, basic: str, *, bridge: bool = False, freeze_without_toolchain: bool = False,
          meta: bool = False, lean: dict[str, object] | None = None, lemma_dag: str = "{}\n",
          audited_bridge: str = BRIDGE_STATEMENT, audited_grade: int = 3) -> Setup:
    """The project in ``root`` with ``thm-root``'s candidate ``basic`` (model-written part)
    recorded after its prove stage; ``bridge`` adds the bridge obligation to the freeze;
    ``freeze_without_toolchain`` freezes ``thm-root`` as if no toolchain had been installed;
    ``meta`` makes every unit file import ``Lean`` (``[lean] extra_imports``), for candidates
    that use Lean's API; ``lean`` adds more ``[lean]`` settings (``fyan selftest``: the pin and
    ``trust_without_selftest``); ``lemma_dag`` is ``thm-root``'s recorded plan (``lemma_dag.json``);
    ``audited_bridge`` the S0 declaration the audit result says it graded (default: the frozen one);
    ``audited_grade`` the grade of ``thm-root``'s recorded audit result (routing ``freeze`` all the same).

    Everything up to ``thm-root``'s audit is done once per variant and toolchain kind (double or
    real) and copied: the project folder is self-contained (relative paths only)."""
    os.environ.pop("FYAN_FAKE_SCENARIO", None)  # the stages run with a clean toolchain (double or real)
    plan = {"def-double": (["double"], []), "thm-root": ([ROOT], [BRIDGE] if bridge else [])}
    checks = _checks(plan, freeze_without_toolchain, audited_bridge, audited_grade)
    double = "FYAN_FAKE_LOG" in os.environ  # any instance of the toolchain double behaves the same
    settings = {**({"extra_imports": ["Lean"]} if meta else {}), **(lean or {})}
    key = (bridge, freeze_without_toolchain, double, os.environ.get("FYAN_LEAN__SANDBOX"),
           json.dumps(settings, sort_keys=True), lemma_dag, audited_bridge, audited_grade)
    if key not in _SNAPSHOTS:
        snap = _SNAPSHOT_ROOT / f"variant-{len(_SNAPSHOTS)}"
        lean_toml = "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
        extra = f'lean_lib = "{LIB}"\n' + ("\n[lean]\n" + lean_toml if settings else "")
        project, gw = _ingested(snap, checks, extra)
        _drive(project, gw, "def-double", DEF_BODY, DEF_BODY, list(Stage))
        statement = ROOT_STATEMENT + ("\n\n" + BRIDGE_STATEMENT if bridge else "")
        _drive(project, gw, "thm-root", statement, "", [Stage.REASON, Stage.PLAN, Stage.AUDIT], lemma_dag)
        gw.close()
        _SNAPSHOTS[key] = snap
    shutil.copytree(_SNAPSHOTS[key], root, symlinks=True)
    project = Project.open(root)
    gw = Gateway(project, checks)
    _drive(project, gw, "thm-root", "", basic, [Stage.PROVE])
    return Setup(project, gw)


def load_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))
