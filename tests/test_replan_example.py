"""End to end through the CLI: the re-plan example (``projects/replan-consecutive``), replayed.

Its first plan has a false planned lemma (``mul_self_even``: ``2 ∣ n * n``); the Formalizer's
authored reply refutes it with a Lean proof of the negation, Fyan compiles that refutation,
the unit goes back to the Planner, the revised plan drops the lemma, and the unit completes.
The Lean toolchain is the test double ``tests/fakes/fake_lake.py`` (``fake_lake`` fixture), which
stands in for ``lean`` as the "Compiling a module" rows of docs/lean-contract.md describe (a
file without ``sorry`` and without an error compiles).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fyan.cli import main
from fyan.state.models import FailureKind, Stage
from fyan.state.store import Store
from tests.conftest import ROOT

EXAMPLE = ROOT / "projects" / "replan-consecutive"
UNIT = "thm-consecutive-product"


@pytest.fixture
def replan_example(tmp_path) -> Path:
    dest = tmp_path / EXAMPLE.name
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".fyan", "units", "lean", "workspaces", "skills"))
    return dest


def run_json(capsys, *argv):
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_false_lemma_is_refuted_the_plan_revised_and_the_unit_completes(replan_example, fake_lake, capsys):
    code, summary = run_json(capsys, "run", str(replan_example))
    assert code == 0, summary
    assert summary["counts"] == {"complete": 1}, summary.get("blocked")
    store = Store(replan_example / ".fyan" / "state.db")
    runs = store.runs(UNIT)
    assert [(r.stage.value, r.status.value) for r in runs] == [
        ("reason", "succeeded"), ("plan", "succeeded"), ("audit", "succeeded"), ("prove", "failed"),
        ("plan", "succeeded"), ("prove", "succeeded"), ("gate", "succeeded")]
    replan = runs[3]
    assert replan.failure_kind is FailureKind.REPLAN and replan.rewind_to is Stage.PLAN
    assert replan.reason.startswith("re-plan 1 of 3: lemma_false mul_self_even (Lean proof of `¬ (∀ (n : Nat), 2 ∣ n * n)`")
    # the refutation was compiled by Fyan, in the unit's workspace, as a module of its own
    refutation = replan_example / replan.attempt_dir / "refutation.lean"
    assert "theorem mul_self_even_refuted : ¬ (∀ (n : Nat), 2 ∣ n * n) :=" in refutation.read_text()
    assert any(c["module"] == "ReplanConsecutive.ThmConsecutiveProduct.Refutation" for c in fake_lake.compiles())
    record = json.loads((replan_example / "units" / UNIT / "replan" / "verdict.json").read_text())
    assert record["accepted"] and record["evidence"] == "lean_negation" and record["run"] == replan.id
    assert record["helpers"] == ["two_dvd_mul_succ_of_odd"]
    # the frozen root was never unfrozen (no second audit), the false lemma is gone from the proof,
    # and the helper lemma proved before the re-plan reached the next attempt
    assert [f.decl.split(".")[-1] for f in store.freezes(UNIT)] == ["consecutive_product_even"]
    assert store.freezes(UNIT)[0].run_id == runs[2].id
    basic = (replan_example / "units" / UNIT / "Basic.lean").read_text()
    assert "mul_self_even" not in basic and "two_dvd_mul_succ_of_odd" in basic
    def requests(run) -> str:
        return "\n".join(p.read_text() for p in sorted((replan_example / run.attempt_dir / "calls").glob("*.request.json")))

    assert "two_dvd_mul_succ_of_odd" in requests(runs[5])  # the next prove attempt starts from it
    # the Planner was told why it plans again
    assert "`lemma_false` on the planned lemma `mul_self_even`" in requests(runs[4])
    assert "lemma_false" not in requests(runs[1])
    # status: counts of re-plans and refuted lemmas, in the JSON and the text
    code, status = run_json(capsys, "status", str(replan_example))
    unit = next(u for u in status["units"] if u["id"] == UNIT)
    assert (unit["replans"], unit["refuted_lemmas"], status["replans"], status["refuted_lemmas"]) == (1, 1, 1, 1)
    assert main(["status", str(replan_example)]) == 0
    text = capsys.readouterr().out
    assert "1 re-plan(s), 1 planned lemma(s) refuted" in text and "[1 re-plan, 1 lemma refuted]" in text
    # the dashboard: the overview's counts, the unit's row and page, the state the page script reads
    from fyan.dashboard.server import start_in_thread
    from fyan.project import Project
    from tests.test_dashboard import request

    server, url, _ = start_in_thread(Project.open(replan_example), 0)
    try:
        assert server.started
        _, page = request(url, path="/")
        assert "<span id=replans> — 1 re-plan, 1 lemma refuted</span>" in page
        assert "[1 re-plan, 1 lemma refuted]" in page
        _, page = request(url, path=f"/unit/{UNIT}")
        assert "<p id=replans>Re-plans: 1 · planned lemmas refuted: 1 · refutations executed: 0</p>" in page
        _, state = request(url, path="/api/state")
        assert (json.loads(state)["replans"], json.loads(state)["refuted_lemmas"]) == (1, 1)
    finally:
        server.should_exit = True
