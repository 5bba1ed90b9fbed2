"""``fyan audit`` on the example project, whose audit calls are replayed authored responses."""

from __future__ import annotations

import json

from fyan.cli import main
from fyan.state.store import Store


def test_fyan_audit_shows_a_real_record_for_every_example_unit(example, fake_lake, monkeypatch, capsys):
    assert main(["run", str(example), "--json"]) == 0
    capsys.readouterr()
    store = Store(example / ".fyan" / "state.db")
    audit_calls = [c for c in store.model_calls() if c.stage == "audit"]
    assert len(audit_calls) == 33 and all(c.replay for c in audit_calls)  # source, check, record per unit
    for unit in store.units():
        assert main(["audit", str(example), unit.id, "--json"]) == 0, unit.id
        data = json.loads(capsys.readouterr().out)
        assert data["status"] == "certified" and data["routing"] == "freeze" and data["grade"] >= 2
        assert data["items"] and all(it["grade"] >= 2 for it in data["items"])
        sides = {s["id"][0] for s in data["slots"]}
        assert sides == {"s", "c"}
        covered = {x for it in data["items"] for x in it["source"] + it["candidate"]}
        assert covered == {s["id"] for s in data["slots"]}
    assert main(["audit", str(example), "definition-1"]) == 0
    out = capsys.readouterr().out
    assert "sd1 `even` ~ cd1 `IsEven`" in out and "defined_term_naming" in out
    assert "routing: freeze; status: certified" in out


def test_fyan_audit_works_without_a_toolchain_and_says_what_is_missing(example, no_lake, capsys):
    main(["run", str(example), "--json"])
    capsys.readouterr()
    assert main(["audit", str(example), "def-divides"]) == 0
    out = capsys.readouterr().out
    assert "grade 2 (threshold 2); routing: freeze; status: certified" in out
    assert main(["audit", str(example), "theorem-8"]) == 3  # waiting on its dependencies: not audited yet
    assert "not audited yet" in capsys.readouterr().out
