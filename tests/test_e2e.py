"""End to end through the CLI: the example project with replayed (authored) responses.

The Lean toolchain is the test double ``tests/fakes/fake_lake.py`` (``fake_lake`` fixture),
standing in for a real ``lake``; ``no_lake`` runs without any toolchain.
"""

from __future__ import annotations

import json


from fyan.cli import main
from fyan.intake.tex import read_tex
from fyan.lean.toolchain import TOOLCHAIN_MISSING
from fyan.orchestrator.lock import ProjectLock
from fyan.state.gateway import sha256_file
from fyan.state.models import RunStatus, Stage
from fyan.state.store import Store
from tests.conftest import write

UNIT_FILES = ["problem.tex", "proof.md", "lemma_dag.json", "blueprint.md", "Statement.lean",
              "audit/record.json", "audit/result.json", "Basic.lean", "gate/report.json"]


def run_json(capsys, *argv):
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_example_completes_in_dependency_order_with_a_clean_toolchain(example, fake_lake, capsys):
    code, summary = run_json(capsys, "run", str(example))
    assert code == 0, summary
    assert summary["units"] == 11 and summary["counts"] == {"complete": 11} and summary["layers"] == 3, summary.get("blocked")
    store = Store(example / ".fyan" / "state.db")
    runs = store.runs()
    gate_done = {r.unit: r.finished_at for r in runs if r.stage is Stage.GATE and r.status is RunStatus.SUCCEEDED}
    first_start = {}
    for r in runs:
        first_start.setdefault(r.unit, r.started_at)
    deps = store.deps()
    assert deps, "the example has dependency edges"
    for d in deps:
        assert gate_done[d.depends_on] <= first_start[d.unit], f"{d.unit} started before {d.depends_on} was complete"
    # every stage ran exactly once per unit: replayed responses pass every check first time
    assert sorted({(r.unit, r.stage) for r in runs}) == sorted((u.id, s) for u in store.units() for s in Stage)
    assert len(runs) == 55
    # artifacts: all there, each recorded with its hash; nothing in units/ the gateway did not write
    recorded = {(a.unit, a.kind): a.sha256 for a in store.artifacts()}
    for u in store.units():
        for name in UNIT_FILES:
            path = example / "units" / u.id / name
            assert recorded[(u.id, name)] == sha256_file(path), path
    on_disk = {(p.relative_to(example / "units").parts[0], "/".join(p.relative_to(example / "units").parts[1:]))
               for p in (example / "units").rglob("*") if p.is_file()}
    assert on_disk <= set(recorded)
    # proved units became importable modules of the project's Lake package
    root = (example / "lean" / "TasteNumberTheory.lean").read_text()
    for u in store.units():
        assert f"import TasteNumberTheory.{u.module}.Basic" in root
        assert (example / "lean" / "TasteNumberTheory" / u.module / "Basic.lean").is_file()
        # ... compiled once, by its gate: the recorded .olean, read-only in the package
        olean = example / "lean" / ".lake" / "build" / "lib" / "lean" / "TasteNumberTheory" / u.module / "Basic.olean"
        assert olean.read_bytes() == (example / "units" / u.id / "Basic.olean").read_bytes()
        assert olean.stat().st_mode & 0o222 == 0
    # every gate (and freeze) workspace compiled its own unit's modules only, never an upstream unit
    modules = {u.id: f"TasteNumberTheory.{u.module}." for u in store.units()}
    gate_compiles = [(c["package"].split("/.fyan/gate/")[1].split("/")[0], c["module"]) for c in fake_lake.compiles()
                     if "/.fyan/gate/" in c["package"]]
    assert gate_compiles and all(m.startswith(modules[unit]) for unit, m in gate_compiles), \
        [(u, m) for u, m in gate_compiles if not m.startswith(modules[u])]
    downstream = (example / "units" / "theorem-8" / "Basic.lean").read_text()
    assert "import TasteNumberTheory.Definition1.Basic" in downstream
    assert "import TasteNumberTheory.DefDivides.Basic" in downstream
    # the gate really asked the toolchain: one compile (plain `lean`) and one inspection per unit at least
    calls = [c["argv"] for c in fake_lake.calls()]
    assert sum(a[:1] == ["lean"] and "-R" in a for a in calls) >= 11
    # every gate read the compiled unit with the trusted inspector, built once for the pin
    assert sum(a[:1] == ["fyan-inspector"] and "--module" in a for a in calls) >= 11
    assert sum(a[:2] == ["build", "fyan-inspector"] for a in calls) == 1
    report = json.loads((example / "units" / "theorem-8" / "gate" / "report.json").read_text())
    assert report["passed"] and {c["name"] for c in report["checks"] if c["status"] == "pass"} >= {
        "sorry_free", "build", "frozen_statements", "bridge_obligations", "semantic_certification", "axiom_audit"}
    # the Specifier's model part proposed two edges, checked and recorded as such
    proposed = {(d.unit, d.depends_on) for d in deps if d.origin == "proposed"}
    assert proposed == {("theorem-7", "thm-divides-sum"), ("theorem-7", "thm-divides-negative")}
    assert "divides_add" in (example / "units" / "theorem-7" / "Basic.lean").read_text()
    # Curator and Auditor ran after completion, once per unit each
    post = store.post_runs()
    assert sorted((p.unit, p.task) for p in post) == sorted((u.id, t) for u in store.units() for t in ("curate", "review"))
    assert {p.status for p in post} == {RunStatus.SUCCEEDED}
    skills = sorted(p.name for p in (example / "skills").glob("*.md"))
    assert skills == ["divisibility-by-witness.md", "parity-case-split.md", "reuse-closure-lemmas.md"]
    refused = json.loads((example / "units" / "thm-transitivity-of-divides" / "curate.json").read_text())["refused"]
    assert refused == [{"skill": "divides-trans-chain", "reason": "names lemma(s) not in the environment: Divides.trans_mul"}]
    assert "TasteNumberTheory.ThmDividesSum.divides_add" in (example / "skills" / "reuse-closure-lemmas.md").read_text()
    review = (example / "units" / "theorem-8" / "review.md").read_text()
    assert "| declarations | 2 (theorem 2) |" in review and "| `sorry` | 0 |" in review
    assert "- the reviewer listed axioms ['propext']; the inspector found none" in review  # the counts win
    assert review.index("Deterministic counts") < review.index("Reviewer's notes (model-written)")
    # accounting: every call persisted; status --cost sums per stage and per unit
    code, status = run_json(capsys, "status", str(example), "--cost")
    cost = status["cost"]
    assert set(cost["by_stage"]) == {"specify", "reason", "plan", "audit", "prove", "curate", "review"}
    assert set(cost["by_unit"]) == {u.id for u in store.units()} | {"(project)"}
    cassette = [json.loads(line) for line in (example / "replay" / "cassette.jsonl").read_text().splitlines()
                if line.strip()]
    # one replayed call per cassette entry: the cassette holds exactly what the example needs, with
    # the Formalizer's tools (as shipped) and without them (the prove replies recorded for
    # `tools = false`, for scripts/bench_tool_calls.py)
    plain_prove = [e for e in cassette if e["stage"] == "prove" and "thread" not in e]
    assert len(plain_prove) == 11
    assert cost["total"]["calls"] == len(store.model_calls()) == len(cassette) - 11 == cost["total"]["replayed"]
    # the Formalizer of def-divides called search_declarations in two rounds, on the example's list
    prove = next(r for r in runs if r.unit == "def-divides" and r.stage is Stage.PROVE)
    rounds = [json.loads(x) for x in (example / prove.attempt_dir / "tools.jsonl").read_text().splitlines()]
    assert [(r["tool"], r["status"]) for r in rounds] == [("search_declarations", "ok")] * 2
    assert cost["tool_loop"]["by_unit"]["def-divides"] == {"attempts": 1, "tool_calls": 2, "tokens": cost[
        "tool_loop"]["by_unit"]["def-divides"]["tokens"], "wall_s": cost["tool_loop"]["by_unit"]["def-divides"][
        "wall_s"], "model_calls": 3, "environment_failures": 0}
    assert cost["by_stage"]["reason"]["calls"] == 22  # proof and review pass for each unit
    assert sum(r["tokens_in"] for r in cost["by_unit"].values()) == cost["total"]["tokens_in"] > 0


def test_example_without_toolchain_blocks_every_unit_with_the_message(example, no_lake, capsys):
    code, summary = run_json(capsys, "run", str(example))
    assert code == 3
    assert summary["counts"] == {"blocked": 11}
    reasons = {b["unit"]: b["reason"] for b in summary["blocked"]}
    assert reasons["definition-1"] == TOOLCHAIN_MISSING
    assert reasons["theorem-8"].startswith("dependency ") and reasons["theorem-8"].endswith(TOOLCHAIN_MISSING)
    code, status = run_json(capsys, "status", str(example))
    assert code == 0
    # one unit per theorem-like statement of a unit kind in the source
    catalogue = read_tex(example / "source" / "TasteNumberTheory.tex")
    expected = [s for s in catalogue.statements if s.kind in ("theorem", "corollary", "definition")]
    assert len(status["units"]) == len(expected) == 11
    # the two units of layer 0 failed at the gate; the nine others only wait on them
    assert {u["id"]: u["status"] for u in status["units"] if u["status"] == "failed"} == {
        "definition-1": "failed", "def-divides": "failed"}
    assert status["counts"] == {"failed": 2, "waiting": 9} and status["waiting_on_failed"] == 9
    assert status["status_version"] == 2
    assert [u["stage"] for u in status["units"] if u["layer"] == 0] == ["gate", "gate"]
    # the gate report explains each check
    report = json.loads((example / "units" / "definition-1" / "gate" / "report.json").read_text())
    assert not report["passed"]
    by_name = {c["name"]: c for c in report["checks"]}
    for name in ("build", "sorry_free", "axiom_audit"):
        assert by_name[name]["status"] == "fail" and by_name[name]["reason"] == TOOLCHAIN_MISSING
    assert by_name["kernel_replay"]["status"] == "unavailable"


def test_rerun_after_installing_lean_resumes_without_redoing_work(example, no_lake, capsys, monkeypatch, tmp_path,
                                                                  double_selftest):
    assert main(["run", str(example), "--json"]) == 3
    capsys.readouterr()
    from tests.conftest import DOUBLE_READABLE, FakeLake, instrument_confinements

    fake = FakeLake(tmp_path)
    monkeypatch.setenv("FYAN_LEAN__LAKE", str(fake.path))
    monkeypatch.setenv("FYAN_LEAN__SANDBOX", "auto")  # as in the fake_lake fixture
    instrument_confinements(monkeypatch, fake.instruments)
    # the double's interpreter and sources, which a checkout under /tmp or home keeps hidden
    monkeypatch.setenv("FYAN_LEAN__SANDBOX_READABLE", json.dumps(DOUBLE_READABLE))
    monkeypatch.delenv("FYAN_FAKE_SCENARIO", raising=False)
    code, summary = run_json(capsys, "run", str(example))
    assert code == 0 and summary["counts"] == {"complete": 11}, summary.get("blocked")
    runs = Store(example / ".fyan" / "state.db").runs("definition-1")
    assert [(r.stage.value, r.status.value) for r in runs] == [
        ("reason", "succeeded"), ("plan", "succeeded"), ("audit", "succeeded"), ("prove", "succeeded"),
        ("gate", "failed"), ("gate", "succeeded")]


def test_missing_replay_response_is_reported_and_blocks_the_unit(example, fake_lake, capsys):
    cassette = example / "replay" / "cassette.jsonl"
    lines = [line for line in cassette.read_text().splitlines()
             if not ('"unit": "theorem-8"' in line and '"stage": "plan"' in line)]
    cassette.write_text("\n".join(lines) + "\n")
    code, summary = run_json(capsys, "run", str(example))
    assert code == 3 and summary["counts"] == {"complete": 10, "blocked": 1}
    reason = summary["blocked"][0]["reason"]
    assert summary["blocked"][0]["unit"] == "theorem-8"
    # the stage and prompt once (the unit is the row); the same words for every unit that misses
    assert reason == f"the replay cassette {cassette} has no response for the plan stage (prompt plan), model example-authored"
    [group] = summary["blocked_groups"]
    assert group["cause"] == reason and group["roots"] == ["theorem-8"] and "re-record" in group["remedy"]


def test_post_completion_failure_never_changes_completion(example, fake_lake, capsys):
    cassette = example / "replay" / "cassette.jsonl"
    lines = [line for line in cassette.read_text().splitlines()
             if not ('"unit": "theorem-8"' in line and '"stage": "curate"' in line)]
    cassette.write_text("\n".join(lines) + "\n")
    code, summary = run_json(capsys, "run", str(example))
    assert code == 0 and summary["counts"] == {"complete": 11}, summary.get("blocked")
    store = Store(example / ".fyan" / "state.db")
    failed = [p for p in store.post_runs() if p.status is RunStatus.FAILED]
    assert [(p.unit, p.task) for p in failed] == [("theorem-8", "curate")] and "has no response" in failed[0].reason
    assert store.views(3)["theorem-8"].status.value == "complete"
    code, status = run_json(capsys, "status", str(example))
    by_id = {u["id"]: u for u in status["units"]}
    assert by_id["theorem-8"]["status"] == "complete"
    assert by_id["theorem-8"]["after_completion"] == {"curate": "failed", "review": "succeeded"}
    # the next session tries the failed task again; the unit stays complete
    code, summary = run_json(capsys, "run", str(example))
    assert code == 0 and summary["counts"] == {"complete": 11} and summary["steps"] == 0
    assert [(p.unit, p.task, p.status.value) for p in store.post_runs()][-1] == ("theorem-8", "curate", "failed")


def test_run_on_a_folder_that_is_not_a_project(tmp_path, capsys):
    assert main(["run", str(tmp_path)]) == 4
    assert "not a Fyan project (no fyan.toml)" in capsys.readouterr().err
    assert main(["status", str(tmp_path / "missing")]) == 4


def test_second_run_on_the_same_project_is_refused(example, capsys):
    with ProjectLock(example / ".fyan" / "run.lock"):
        assert main(["run", str(example)]) == 5
    assert "another Fyan run is already working on this project" in capsys.readouterr().err


def test_init_creates_a_project_and_bad_input_leaves_nothing(tmp_path, capsys):
    good = write(tmp_path / "doc" / "main.tex", "\\begin{lemma}\\label{l} $1 = 1$. \\end{lemma}\n\\input{more}\n")
    write(tmp_path / "doc" / "more.tex", "\\begin{theorem} By \\ref{l}. \\end{theorem}\n")
    code, result = run_json(capsys, "init", str(tmp_path / "p"), "--source", str(good))
    assert code == 0 and result["units"] == 2 and result["edges"] == 1 and result["layers"] == 2
    assert (tmp_path / "p" / "source" / "more.tex").is_file() and (tmp_path / "p" / "units" / "l" / "problem.tex").is_file()
    assert main(["init", str(tmp_path / "p"), "--source", str(good)]) == 4  # exists, not empty
    bad = write(tmp_path / "bad.tex", "\\begin{lemma}\\label{a} \\ref{zzz} \\end{lemma}\n")
    # an unknown label is refused with --strict (by default it warns, as LaTeX prints ?? and goes on)
    assert main(["init", str(tmp_path / "q"), "--source", str(bad), "--strict"]) == 4
    err = capsys.readouterr().err
    assert "bad.tex:1: \\ref{zzz} in a: unknown label" in err
    assert not (tmp_path / "q").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".q")] == []
    assert main(["init", str(tmp_path / "q"), "--source", str(bad)]) == 0
    assert "zzz" in capsys.readouterr().out


def test_bad_source_in_an_example_folder_leaves_no_state(example, capsys):
    (example / "source" / "TasteNumberTheory.tex").write_text("\\begin{theorem} unclosed\n")
    assert main(["run", str(example)]) == 4
    assert "TasteNumberTheory.tex:1: \\begin{theorem} is never closed" in capsys.readouterr().err
    assert not (example / ".fyan" / "state.db").exists()


def test_gate_command_prints_every_check(example, no_lake, capsys):
    main(["run", str(example), "--json"])
    capsys.readouterr()
    assert main(["gate", str(example), "def-divides"]) == 3
    out = capsys.readouterr().out
    assert "Completion gate for def-divides: NOT PASSED" in out
    for name in ("sorry_free", "build", "frozen_statements", "bridge_obligations", "semantic_certification",
                 "axiom_audit", "source_lints", "kernel_replay"):
        assert f"] {name}" in out
    assert main(["gate", str(example), "nope"]) == 2  # an unknown unit id: a bad command line


def test_status_before_first_run(example, capsys):
    assert main(["status", str(example)]) == 0
    assert "not ingested yet" in capsys.readouterr().out
