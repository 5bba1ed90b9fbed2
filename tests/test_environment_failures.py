"""Infrastructure failures are the environment's, never the proof's.

A Lean or inspector crash (killed by a signal), an out-of-memory kill or a missing binary during
the completion gate is retried with bounded exponential backoff in the same attempt
(``fyan.gates.stages.run_gate_retrying``, tenacity); when it persists, the attempt fails as
``FailureKind.ENVIRONMENT``: no gate attempt is charged, the unit waits on the environment for
this session, and the next session (``fyan run``/``fyan resume``) runs the gate again. A missing
toolchain (configuration) is not retried: it blocks for the session with its remedy.

The toolchain double (``tests/fakes/fake_lean.py``, ``fake_inspector.py``) crashes by the signal
the scenario names, for the first ``times`` runs only (a toolchain that crashes twice, then works).
"""

from __future__ import annotations

import json
import signal
import time

import pytest

from fyan.gates.completion import inspector_environment_problem
from fyan.lean.inspector import Inspection
from fyan.sandbox.runner import ProcessResult
from fyan.state.models import FailureKind, RunStatus, Stage, UnitStatus
from tests import gate_harness as h

FAST = {"environment_backoff_s": 0.0}


@pytest.fixture
def unit_at_gate(fake_lake, tmp_path) -> h.Setup:
    return h.setup(tmp_path / "p", h.HONEST, lean=FAST)


def _gate(s: h.Setup) -> object:
    run = s.gateway.begin(s.unit_id, Stage.GATE, h.ATTEMPTS)
    return s.gateway.finish(run)


def _builds(fake_lake, module: str) -> int:
    return sum(1 for c in fake_lake.compiles() if c["module"] == module)


def _gate_runs(s: h.Setup) -> list:
    return [r for r in s.store.runs(s.unit_id) if r.stage is Stage.GATE]


@pytest.mark.parametrize("crash", [
    {"build": {"signal": int(signal.SIGSEGV), "times": 2}},
    {"build": {"signal": int(signal.SIGKILL), "times": 2}},  # what the kernel's OOM killer sends
    {"inspector_process": {"signal": int(signal.SIGSEGV), "times": 2}},
    # a binary or library missing for a moment (a toolchain being reinstalled): exit 127
    {"build": {"output": "lean: error while loading shared libraries: libleanshared.so", "exit": 127, "times": 2}},
], ids=["lean-segfault", "lean-oom-kill", "inspector-segfault", "missing-binary"])
def test_a_toolchain_that_crashes_twice_then_works_completes_the_unit_uncharged(unit_at_gate, fake_lake, crash):
    s = unit_at_gate
    fake_lake.scenario({**crash, "build_only": [f"{s.ns}.Basic"]})
    done = _gate(s)
    assert done.status is RunStatus.SUCCEEDED, done.reason
    runs = _gate_runs(s)
    assert len(runs) == 1 and runs[0].status is RunStatus.SUCCEEDED  # one attempt, nothing charged
    assert s.store.views(h.ATTEMPTS)[s.unit_id].status is UnitStatus.COMPLETE


def test_a_crash_that_persists_waits_on_the_environment_and_a_later_session_completes(unit_at_gate, fake_lake):
    s = unit_at_gate
    fake_lake.scenario({"build": {"signal": int(signal.SIGSEGV)}, "build_only": [f"{s.ns}.Basic"]})
    s.gateway.start_session()
    before = _builds(fake_lake, f"{s.ns}.Basic")
    done = _gate(s)
    assert done.status is RunStatus.FAILED and done.failure_kind is FailureKind.ENVIRONMENT, done.reason
    assert done.reason.startswith("waiting on the environment (not the proof; ran 3 time(s)"), done.reason
    assert "SIGSEGV" in done.reason
    assert _builds(fake_lake, f"{s.ns}.Basic") - before == 0  # a crashed compile writes nothing
    view = s.store.views(h.ATTEMPTS)[s.unit_id]
    assert view.status is UnitStatus.BLOCKED and view.reason.startswith("waiting on the environment")
    assert "budget" not in view.reason  # not a proof failure: no gate attempt is counted
    # more crashing sessions never use up the gate's attempts
    for _ in range(h.ATTEMPTS):
        time.sleep(0.01)
        s.gateway.start_session()
        assert s.store.views(h.ATTEMPTS)[s.unit_id].status is UnitStatus.READY
        assert _gate(s).failure_kind is FailureKind.ENVIRONMENT
    # the toolchain works again: the next session (fyan resume) completes the unit
    fake_lake.scenario({})
    time.sleep(0.01)
    s.gateway.start_session()
    view = s.store.views(h.ATTEMPTS)[s.unit_id]
    assert view.status is UnitStatus.READY and view.next_stage is Stage.GATE
    assert _gate(s).status is RunStatus.SUCCEEDED
    assert s.store.views(h.ATTEMPTS)[s.unit_id].status is UnitStatus.COMPLETE


def test_an_inspector_crash_is_the_environment_not_the_proof(unit_at_gate, fake_lake):
    """On main an inspector killed by a signal failed the gate as the proof's fault (back to the
    Formalizer, one gate attempt used)."""
    s = unit_at_gate
    fake_lake.scenario({"inspector_process": {"signal": int(signal.SIGABRT)}})
    done = _gate(s)
    assert done.failure_kind is FailureKind.ENVIRONMENT and done.rewind_to is None, done.reason
    assert "the inspector" in done.reason and "SIGABRT" in done.reason
    report = json.loads((s.project.paths.root / done.attempt_dir / "gate" / "report.json").read_text()) \
        if (s.project.paths.root / done.attempt_dir / "gate" / "report.json").is_file() else None
    if report is not None:
        assert report["environment_problem"]


def test_no_toolchain_is_a_configuration_problem_not_retried(unit_at_gate, fake_lake, monkeypatch, tmp_path):
    s = unit_at_gate
    monkeypatch.setenv("FYAN_LEAN__LAKE", str(tmp_path / "no-such-lake"))
    monkeypatch.setenv("PATH", str(tmp_path))
    import fyan.gates.stages as stages

    calls = []
    real = stages.run_gate
    monkeypatch.setattr(stages, "run_gate", lambda *a, **k: calls.append(1) or real(*a, **k))
    done = _gate(s)
    assert done.failure_kind is FailureKind.ENVIRONMENT and len(calls) == 1, done.reason
    assert not done.reason.startswith("waiting on the environment")


@pytest.mark.parametrize("proc, expected", [
    (ProcessResult(argv=["i"], cwd=".", exit_code=-11, duration_s=1.0), "killed by SIGSEGV"),
    (ProcessResult(argv=["i"], cwd=".", exit_code=127, duration_s=1.0), "exit code 127"),
    (ProcessResult(argv=["i"], cwd=".", exit_code=None, duration_s=0.0, note="no such file"), "no such file"),
    (ProcessResult(argv=["i"], cwd=".", exit_code=-9, duration_s=1.0, memory_exceeded=True, note="ran out of memory"),
     "ran out of memory"),
    (ProcessResult(argv=["i"], cwd=".", exit_code=None, duration_s=9.0, timed_out=True), None),
    (ProcessResult(argv=["i"], cwd=".", exit_code=1, duration_s=1.0), None),  # a refusal: may be the candidate's
])
def test_which_inspector_failures_are_the_environments(proc, expected):
    got = inspector_environment_problem(Inspection(problem="x", process=proc))
    assert got == expected or (expected is not None and got is not None and expected in got)
