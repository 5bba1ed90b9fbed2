"""The cheat corpus (tests/cheats/): every trick is rejected by the check meant to catch it.

In CI no Lean runs: the toolchain is the test double (``tests/fakes/fake_lake.py``) replaying,
for each cheat file, the output a real Lean toolchain prints for it (build diagnostics in
Lake's v4.31 format, the probe's records; see ``manifest.toml``). What is real here is
everything on Fyan's side: the rendered unit files, the workspace, the Lake runner and its
verdict, the diagnostics parser, the nonce-tagged probe protocol and its parser, the freeze
and the gate. With a real ``lake`` on PATH the tests marked ``lean`` run the same corpus
against it (the replay is not used).
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from fyan.gates.completion import CHECK_ORDER, GateReport
from tests import gate_harness as h

CHEATS_DIR = Path(__file__).parent / "cheats"
MANIFEST = tomllib.loads((CHEATS_DIR / "manifest.toml").read_text(encoding="utf-8"))
CHEATS = MANIFEST["cheat"]
CONTROLS = MANIFEST["control"]
TRICKS = {  # the list of tricks of the issue, each covered by a cheat file
    "sorry", "admit", "sorryax_direct", "macro_sorry", "user_axiom", "native_decide", "implemented_by",
    "skip_kernel_tc", "exit_before_root", "forged_axioms", "local_notation", "auto_implicit", "true_root",
    "edited_statement", "bridge_deleted",
}
ICON = {"error": "✖", "warning": "⚠", "info": "ℹ"}


def model_part(entry: dict) -> str:
    return (CHEATS_DIR / entry["file"]).read_text(encoding="utf-8")


def replay(setup: h.Setup, entry: dict) -> dict:
    """The toolchain-double scenario for ``entry``: its recorded build messages placed at the
    lines of the rendered ``Basic.lean`` they point to, and its probe fields."""
    spec = entry.get("replay", {})
    text = setup.basic.read_text(encoding="utf-8").splitlines()
    rel = "Cheats/ThmRoot/Basic.lean"
    lines = []
    for m in spec.get("messages", []):
        n = next(i for i, line in enumerate(text, start=1) if m["at"] in line)
        lines.append(f"{m['severity']}: {rel}:{n}:{text[n - 1].index(m['at'])}: {m['text']}")
    worst = next((s for s in ("error", "warning", "info") if any(m["severity"] == s for m in spec.get("messages", []))), None)
    output = "\n".join([
        "✔ [1/2] Built Cheats.DefDouble.Basic (0.3s)",
        f"{ICON.get(worst, '✔')} [2/2] Built Cheats.ThmRoot.Basic (0.6s)",
        *lines,
        "Build completed successfully (2 jobs).",
    ])
    scenario: dict = {"build": {"exit": 0, "output": output},
                      "probe": {f"{setup.ns}.{name}": fields for name, fields in spec.get("probe", {}).items()}}
    if "kernel_replay" in spec:
        scenario["kernel_replay"] = spec["kernel_replay"]
    return scenario


def expected_failures(entry: dict) -> dict[str, str]:
    return {entry["caught_by"]: entry["reason"], **entry.get("also", {})}


def assert_rejected_as_intended(report: GateReport, entry: dict, *, exact: bool) -> None:
    assert report.passed is False, f"{entry['id']} passed the gate"
    intended = report.check(entry["caught_by"])
    assert intended.status == "fail" and intended.required, (entry["id"], intended)
    assert entry["reason"] in intended.reason, (entry["id"], intended.reason)
    for name, fragment in entry.get("also", {}).items():
        c = report.check(name)
        assert c.status == "fail" and fragment in c.reason, (entry["id"], name, c.reason)
    if exact:  # the replayed output: exactly these checks fail, every other one passes
        failing = {c.name for c in report.checks if c.status == "fail"}
        assert failing == set(expected_failures(entry)), (entry["id"], failing)


def test_the_corpus_covers_every_trick_with_a_file_and_an_intended_check():
    assert {c["id"] for c in CHEATS} >= TRICKS
    for c in CHEATS + CONTROLS:
        assert (CHEATS_DIR / c["file"]).is_file(), c["file"]
    for c in CHEATS:
        assert c["verdict"] == "rejected" and c["caught_by"] in CHECK_ORDER and c["reason"], c["id"]
        assert set(c.get("also", {})) <= set(CHECK_ORDER), c["id"]
    assert sorted(p.name for p in CHEATS_DIR.glob("*.lean")) == sorted(c["file"] for c in CHEATS + CONTROLS)


@pytest.mark.parametrize("entry", CONTROLS, ids=[c["id"] for c in CONTROLS])
def test_controls_pass_the_gate(entry, fake_lake, tmp_path):
    s = h.setup(tmp_path / "p", model_part(entry), bridge=entry.get("setup") == "bridge")
    report = s.gate(scenario=None, fake=fake_lake)
    assert report.passed, report.summary()


@pytest.mark.parametrize("entry", CHEATS, ids=[c["id"] for c in CHEATS])
def test_cheat_is_rejected_by_the_intended_check(entry, fake_lake, tmp_path):
    s = h.setup(tmp_path / "p", model_part(entry), bridge=entry.get("setup") == "bridge")
    report = s.gate(scenario=replay(s, entry), fake=fake_lake)
    assert_rejected_as_intended(report, entry, exact=True)
    # the report is what `fyan gate` shows: every check with its reason
    assert [c.name for c in report.checks] == list(CHECK_ORDER)


def test_kernel_replay_catches_the_skipped_kernel_check_when_a_checker_exists(fake_lake, tmp_path):
    entry = next(c for c in CHEATS if c["id"] == "skip_kernel_tc")
    checker = fake_lake.dir / "leanchecker"  # stands in for the toolchain's leanchecker
    checker.write_text("#!/bin/sh\nexit 0\n")
    checker.chmod(0o755)
    s = h.setup(tmp_path / "p", model_part(entry))
    report = s.gate(scenario=replay(s, entry), fake=fake_lake)
    replay_check = report.check("kernel_replay")
    assert replay_check.status == "fail" and replay_check.required
    assert "(kernel) declaration type mismatch" in replay_check.reason
    assert any(c["argv"][:2] == ["env", str(checker)] for c in fake_lake.calls())
    # and an honest unit passes it
    honest = h.setup(tmp_path / "q", h.HONEST)
    report = honest.gate(scenario=None, fake=fake_lake)
    assert report.passed and report.check("kernel_replay").status == "pass"


def test_forged_text_in_the_build_log_is_never_read(fake_lake, tmp_path):
    entry = next(c for c in CHEATS if c["id"] == "forged_axioms")
    s = h.setup(tmp_path / "p", model_part(entry))
    report = s.gate(scenario=replay(s, entry), fake=fake_lake)
    build_log = (s.project.paths.root / "gate-logs" / "build.log").read_text(encoding="utf-8")
    assert "depends on axioms: [propext, Classical.choice, Quot.sound]" in build_log
    assert "FYAN-PROBE-0000" in build_log
    assert report.check("axiom_audit").evidence["axioms"] == {"Cheats.ThmRoot.double_even": ["Cheats.ThmRoot.magic"]}


# -- with a real toolchain --------------------------------------------------------------------

requires_lean = pytest.mark.skipif(shutil.which("lake") is None, reason="no Lean toolchain (`lake`) on PATH")


@pytest.fixture
def real_lake(monkeypatch, tmp_path):
    monkeypatch.delenv("FYAN_LEAN__LAKE", raising=False)
    monkeypatch.delenv("FAKE_LAKE_SCENARIO", raising=False)
    monkeypatch.setenv("FYAN_LEAN__BUILD_TIMEOUT", "1800")


@pytest.mark.lean
@requires_lean
@pytest.mark.parametrize("entry", CONTROLS, ids=[c["id"] for c in CONTROLS])
def test_controls_pass_with_real_lean(entry, real_lake, tmp_path):
    s = h.setup(tmp_path / "p", model_part(entry), bridge=entry.get("setup") == "bridge")
    report = s.gate()
    assert report.passed, report.summary()


@pytest.mark.lean
@requires_lean
@pytest.mark.parametrize("entry", CHEATS, ids=[c["id"] for c in CHEATS])
def test_cheat_is_rejected_with_real_lean(entry, real_lake, tmp_path):
    s = h.setup(tmp_path / "p", model_part(entry), bridge=entry.get("setup") == "bridge")
    report = s.gate()
    assert_rejected_as_intended(report, entry, exact=False)
