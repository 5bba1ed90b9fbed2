"""The completion gate's checks are pure functions of the evidence fields they declare
(``fyan.gates.completion.Check.reads``), and none can change the evidence (``GateEvidence``) the
other checks and the verdict see. The evidence comes from real gate runs on the gate tests'
project with the toolchain double (``tests/fakes/fake_lake.py``, standing in for ``lake`` and
``lean`` as in tests/test_gate.py), driven into a pass and into several failures."""

from __future__ import annotations

import copy
import dataclasses

import pytest

import fyan.gates.completion as completion
from fyan.gates.completion import CHECKS, Check, GateEvidence, decide, finding
from tests import gate_harness as h

CANDIDATE = ["Cheats.ThmRoot.Basic"]


def evidence_of(setup: h.Setup, scenario: dict | None, fake, monkeypatch) -> GateEvidence:
    """The evidence ``run_gate`` decided from on ``setup`` (the last ``decide`` call)."""
    seen: list[GateEvidence] = []
    original = completion.decide

    def capture(ev, checks=CHECKS):
        seen.append(ev)
        return original(ev, checks)

    monkeypatch.setattr(completion, "decide", capture)
    report = setup.gate(scenario, fake=fake)
    assert seen and [c.name for c in report.checks][:len(CHECKS)] == [c.name for c in CHECKS]
    return seen[-1]


def undeclared_swapped(check: Check, ev: GateEvidence, other: GateEvidence) -> GateEvidence:
    """``ev`` with every field ``check`` does not declare taken from ``other`` (a different gate
    run), so a check that reads one sees a different, plausible value."""
    return dataclasses.replace(ev, **{f.name: getattr(other, f.name) for f in dataclasses.fields(ev)
                                      if f.name not in check.reads})


def same_findings(check: Check, a: GateEvidence, b: GateEvidence) -> bool:
    fa, fb = check.decide(a), check.decide(b)
    return (fa.ok, fa.reason, fa.required, dict(fa.evidence), fa.environment) == \
        (fb.ok, fb.reason, fb.required, dict(fb.evidence), fb.environment)


def test_every_check_reads_only_the_evidence_it_declares(fake_lake, tmp_path, monkeypatch):
    """Each check gives the same finding on an evidence and on a copy whose undeclared fields
    come from another gate run, for every pair of four runs (a pass, a sorry in the compiled
    axioms, a build timeout, a bridge obligation); and on its restricted view (undeclared fields
    raise on use). A check reading an undeclared field is caught by the same comparison."""
    honest = h.setup(tmp_path / "a", h.HONEST)
    runs = [evidence_of(honest, None, fake_lake, monkeypatch),
            evidence_of(honest, {"inspect": {"Cheats.ThmRoot.double_even": {"axioms": ["sorryAx"]}}},
                        fake_lake, monkeypatch)]
    honest.project.config.lean.build_timeout = 1
    runs.append(evidence_of(honest, {"build": {"sleep": 10}, "build_only": CANDIDATE}, fake_lake, monkeypatch))
    bridge = h.setup(tmp_path / "b", h.HONEST_BRIDGE, bridge=True)
    runs.append(evidence_of(bridge, None, fake_lake, monkeypatch))
    assert runs[0].build is not None and runs[0].build.ok and runs[2].no_lean is not None
    outcomes = {c.name: set() for c in CHECKS}
    for check in CHECKS:
        assert check.reads <= completion.FIELDS, (check.name, check.reads - completion.FIELDS)
        for ev in runs:
            assert same_findings(check, ev, completion.view(ev, check.reads)), check.name
            outcomes[check.name].add(check.decide(ev).ok)
            for other in runs:
                assert same_findings(check, ev, undeclared_swapped(check, ev, other)), (check.name, other.unit_id)
    assert {True, False} <= outcomes["build"] | outcomes["sorry_free"]  # the runs reach both outcomes

    # the comparison catches a check that reads a field it does not declare
    sneaky = Check("sorry_free", CHECKS[0].reads - {"no_lean"}, completion.check_sorry_free)
    assert not all(same_findings(sneaky, ev, undeclared_swapped(sneaky, ev, other))
                   for ev in runs for other in runs)
    with pytest.raises(TypeError, match="without declaring it"):
        sneaky.decide(completion.view(runs[0], sneaky.reads))
    # and in the gate itself such a check fails, never passes
    result = completion.result_of("sorry_free", completion.run_check(sneaky, runs[0]))
    assert result.status == "fail" and "internal error in the check sorry_free" in result.reason


def test_no_check_can_change_the_evidence(fake_lake, tmp_path, monkeypatch):
    """The evidence is frozen (no field can be set), every check works on deep copies of its
    declared fields: a check that edits what it was given (the inspector's report, a freeze, the
    build's messages) changes neither the evidence nor what the next check sees; and the real
    checks leave the evidence equal to a copy taken before."""
    honest = h.setup(tmp_path / "a", h.HONEST)
    ev = evidence_of(honest, None, fake_lake, monkeypatch)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.no_lean = "changed"  # type: ignore[misc]
    before = copy.deepcopy(ev)
    assert ev.inspection is not None and ev.inspection.report is not None and ev.build is not None
    module = ev.inspection.report.module(ev.module)
    assert module is not None and module.declarations
    declarations_before = len(module.declarations)

    def vandal(view: GateEvidence):
        assert view.inspection is not None and view.inspection.report is not None and view.build is not None
        module = view.inspection.report.module(view.module)
        assert module is not None
        module.declarations.clear()
        view.freezes[0].normalized_signature = "theorem forged : True"
        view.build.diagnostics.clear()
        view.build.ok = False
        return finding(True, "vandalized")

    def observer(view: GateEvidence):
        assert view.inspection is not None and view.inspection.report is not None and view.build is not None
        module = view.inspection.report.module(view.module)
        assert module is not None
        seen = (len(module.declarations), view.freezes[0].normalized_signature, view.build.ok)
        return finding(True, repr(seen))

    reads = frozenset({"inspection", "freezes", "build", "module"})
    verdict = decide(ev, (Check("vandal", reads, vandal), Check("observer", reads, observer)))
    assert verdict.checks[1].reason == repr((declarations_before, before.freezes[0].normalized_signature, True))
    assert ev == before
    decide(ev)
    assert ev == before
    assert decide(ev) == decide(before)  # the verdict is a function of the evidence
