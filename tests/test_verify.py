"""`fyan verify`: every complete unit's gate re-run from scratch; a completion that does not
reproduce is listed (exit 3). The toolchain is the Lake double and the inspector its double
(``tests/fakes/``); the gate, its workspaces and the CLI are real."""

from __future__ import annotations

import json
import sqlite3
import time

from fyan.cli import main
from fyan.gates.stages import check_gate
from fyan.state.models import RunStatus, Stage, UnitStatus
from tests import gate_harness as h


def completed(tmp_path, basic: str) -> h.Setup:
    """The harness project with thm-root's candidate ``basic`` taken through the real gate stage."""
    s = h.setup(tmp_path, basic)
    s.gateway.checks[Stage.GATE] = check_gate
    run = s.gateway.begin("thm-root", Stage.GATE, h.ATTEMPTS)
    s.gateway.finish(run)
    return s


def test_verify_reproduces_honest_completions(fake_lake, tmp_path, capsys):
    s = completed(tmp_path / "p", h.HONEST)
    assert s.store.views(3)["thm-root"].status is UnitStatus.COMPLETE
    s.gateway.close()
    assert main(["verify", str(s.project.paths.root)]) == 0
    out = capsys.readouterr().out
    assert "ok  def-double" in out and "ok  thm-root" in out
    assert "2/2 complete unit(s) reproduce their completion" in out
    assert main(["verify", str(s.project.paths.root), "--json", "--unit", "thm-root"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [u["unit"] for u in data["units"]] == ["thm-root"] and data["not_reproduced"] == []
    report = s.project.paths.root / data["units"][0]["log_dir"] / "report.json"
    assert json.loads(report.read_text())["passed"] is True


def test_verify_lists_a_forged_completion(fake_lake, tmp_path, capsys):
    """Finding 2: a gate run forged into the state store (possible only unconfined) makes
    `status` say complete; `fyan verify` does not reproduce it."""
    s = h.setup(tmp_path / "p", "theorem double_even (n : Int) : ∃ k, double n = 2 * k := by\n  sorry")
    assert s.store.views(3)["thm-root"].status is not UnitStatus.COMPLETE  # waiting for its gate
    db = sqlite3.connect(s.project.paths.db)
    db.execute("INSERT INTO stage_runs (unit, stage, attempt, status, started_at, finished_at, reason, attempt_dir) "
               "VALUES ('thm-root', 'gate', 9, 'succeeded', ?, ?, 'forged', 'x')", (time.time(), time.time()))
    db.commit()
    db.close()
    assert s.store.views(3)["thm-root"].status is UnitStatus.COMPLETE  # what the forgery achieves
    s.gateway.close()
    assert main(["verify", str(s.project.paths.root)]) == 3
    out = capsys.readouterr().out
    assert "NOT REPRODUCED thm-root: sorry_free, axiom_audit" in out and "ok  def-double" in out
    assert main(["verify", str(s.project.paths.root), "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["not_reproduced"] == ["thm-root"]


def test_verify_refuses_an_unknown_unit_and_says_when_nothing_is_complete(fake_lake, tmp_path, capsys):
    s = h.setup(tmp_path / "p", h.HONEST)
    s.gateway.close()
    assert main(["verify", str(s.project.paths.root), "--unit", "no-such-unit"]) == 2  # a bad command line
    assert "no unit 'no-such-unit'" in capsys.readouterr().err
    assert main(["verify", str(s.project.paths.root), "--unit", "thm-root"]) == 0  # not complete: nothing to verify
    assert "no complete unit to verify" in capsys.readouterr().out
    runs = [r for r in s.store.runs("thm-root") if r.stage is Stage.GATE]
    assert all(r.status is not RunStatus.SUCCEEDED for r in runs)  # verify wrote nothing
