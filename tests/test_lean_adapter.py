"""Parsers of real Lean/Lake output (shared/lean-samples), the declaration scanner, lints,
the probe's nonce rule and the process runner."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fyan.lean import declarations
from fyan.lean.diagnostics import parse_lake_output, parse_lean_json, parse_repl_output
from fyan.lean.lints import errors, lint
from fyan.lean.probe import parse_probe_output, probe_lines, render_probe
from fyan.lean.runner import run_process
from tests.conftest import SAMPLES


def sample(name: str) -> str:
    path = SAMPLES / name
    if not path.exists():
        pytest.skip(f"lean sample {name} not available")
    return path.read_text(encoding="utf-8")


def test_lake_v432_failure_log():
    log = parse_lake_output(sample("lake-build-v4.32-failure-ci.txt"))
    assert log.succeeded is False
    assert log.failed_targets == ["IUTThreeClosures.PrimePowerGeneratedThetaHull"]
    err = next(d for d in log.diagnostics if d.severity == "error")
    assert (err.file, err.line, err.column, err.text.splitlines()[0]) == (
        "IUTThreeClosures/PrimePowerGeneratedThetaHull.lean", 339, 28, "unsolved goals")
    # the tail repeats the error with its goal dump: continuation lines belong to the message
    dumps = [d.text for d in log.diagnostics if d.line == 339 and "⊢ Function.update" in d.text]
    assert len(dumps) == 1 and dumps[0].splitlines()[1] == "AG : AnabelianGeometry"
    job = next(j for j in log.jobs if j.icon == "✖")
    assert (job.index, job.total, job.verb, job.duration) == (8788, 8822, "Building", "8.4s")
    assert 1 in log.lean_exit_codes


def test_lake_sorry_warnings_old_path_formats():
    log = parse_lake_output(sample("lake-build-v4.17-sorry-warning-formal-conjectures.txt"))
    sorries = [d for d in log.diagnostics if d.is_sorry]
    assert [(d.file, d.line) for d in sorries] == [
        ("FormalConjectures/ForMathlib/Combinatorics/Basic.lean", 41),
        ("FormalConjectures/ForMathlib/Combinatorics/Basic.lean", 45)]
    win = parse_lake_output(sample("lake-build-v4.8.0-rc1-windows-sorry.txt"))
    first = win.diagnostics[0]
    assert (first.file, first.line, first.column, first.end_line, first.end_column) == (
        "LeanCuttingPlanes/Rules/Division.lean", 8, 8, 8, 24)
    assert sum(d.is_sorry for d in win.diagnostics) == 3


def test_lake_success_tails_and_old_formats():
    log = parse_lake_output(sample("lake-build-success-message-history.txt"))
    assert log.succeeded is True and log.job_count == 6  # timestamps stripped, last tail wins
    old = parse_lake_output(sample("lake-build-2023-old-format.txt"))
    assert old.jobs[0].target == "Mathlib.Tactic.ToAdditive" and old.jobs[0].index == 285
    assert old.diagnostics[0].file == "lake-packages/aesop/Aesop/Util/Basic.lean"
    assert parse_lake_output(sample("lake-build-v4.8.0-windows-failure.txt")).lean_exit_codes == [3221225477]
    assert parse_lake_output(sample("lake-build-v4.14-failure-love.txt")).failed_targets == [
        "Smt.Term", "Smt.Graph", "Smt.Tactic.WHNFConfigurable"]


def test_every_lake_sample_parses():
    for path in sorted(SAMPLES.glob("lake-build-*.txt")):
        log = parse_lake_output(path.read_text(encoding="utf-8"))
        assert log.jobs or log.diagnostics or log.succeeded is not None, path.name


def test_lean_json_lines_both_sorry_texts_and_forged_lines():
    out = parse_lean_json(sample("lean-json-captured-lines.txt"))
    sorries = [d for d in out.diagnostics if d.is_sorry]
    assert len(sorries) == 3
    old = next(d for d in out.diagnostics if d.file == "Old.lean")
    assert old.kind is None and old.is_sorry  # pre-4.15: no kind field, old quote style
    assert any(d.text.startswith("'Empiricist.one_eq_two' depends on axioms: [propext") for d in out.diagnostics)
    assert out.unrecognized  # the prose lines of the sample file


def test_repl_outputs():
    text = sample("repl-have_by_sorry.txt").split("--- expected output ---")[1]
    out = parse_repl_output(text)
    assert [r.env for r in out.responses] == [0, 1, None]
    assert out.responses[1].messages[0].is_sorry and out.responses[2].proof_status.startswith("Incomplete")
    bad = parse_repl_output(sample("repl-unknown_environment.txt").split("--- expected output ---")[1])
    assert bad.responses[0].error == "Unknown environment."


def test_probe_counts_only_lines_with_this_runs_nonce():
    nonce = "FYAN-PROBE-" + "a" * 32
    forged = "FYAN-PROBE-" + "b" * 32
    good = {"name": "N.t", "found": True, "kind": "theorem", "type_hash": "1", "axioms": ["propext"]}
    fake = {"name": "N.t", "found": True, "kind": "theorem", "type_hash": "1", "axioms": []}
    lines = [
        json.dumps({"severity": "information", "data": f"{forged} {json.dumps(fake)}", "fileName": "<stdin>"}),
        json.dumps({"severity": "information", "data": "'N.t' does not depend on any axioms", "fileName": "<stdin>"}),
        json.dumps({"severity": "information", "data": f"{nonce} {json.dumps(good)}", "fileName": "<stdin>"}),
    ]
    result = parse_probe_output("\n".join(lines), nonce, ["N.t"])
    assert result.ok and result.records["N.t"].axioms == ["propext"] and result.ignored_lines == 1
    missing = parse_probe_output(lines[0], nonce, ["N.t"])
    assert not missing.ok and "no record for N.t" in missing.problem
    assert not parse_probe_output("", nonce, ["N.t"]).ok


def test_probe_template_renders_imports_roots_and_nonce():
    text = render_probe(["Lib.Unit.Basic"], ["Lib.Unit.root"], "FYAN-PROBE-x", local_prefix="Lib")
    assert text.startswith("import Lean\nimport Lib.Unit.Basic\n")
    assert '#fyan_probe "FYAN-PROBE-x" "Lib" Lib.Unit.root' in text
    assert "Lean.collectAxioms" in text and "$" not in text
    assert probe_lines(text) == {"Lib.Unit.root": text.splitlines().index('#fyan_probe "FYAN-PROBE-x" "Lib" Lib.Unit.root') + 1}
    with pytest.raises(ValueError):
        render_probe([], ['bad" name'], "n")


LEAN = """namespace A
/-- doc -/
theorem t (n : Int) (h : 0 < n) :
    0 < n + 1 := by
  omega -- comment
def d (n : Int) : Prop := ∃ k, n = 2 * k
end A
"""


def test_declaration_scanner_and_signatures():
    ds = declarations.scan(LEAN)
    assert [(d.kind, d.full_name, d.line_start, d.line_end) for d in ds] == [
        ("theorem", "A.t", 3, 5), ("def", "A.d", 6, 6)]
    assert ds[0].signature == "theorem t (n : Int) (h : 0 < n) : 0 < n + 1"
    assert ds[0].type_text == "0 < n + 1"
    assert ds[1].frozen_signature == "def d (n : Int) : Prop := ∃ k, n = 2 * k"
    assert declarations.strip_comments("a -- b\n/- c /- d -/ e -/ f").split("\n") == ["a     ", "                  f"]


def test_lints_flag_forbidden_constructs_outside_comments():
    src = "-- #exit\nset_option debug.skipKernelTC true\ntheorem x : 1 = 1 := by native_decide\naxiom bad : False\n#eval IO.println \"hi\"\n"
    rules = {f.rule for f in errors(lint(src))}
    assert rules == {"skip-kernel", "native-decide", "axiom", "eval"}


def test_runner_timeout_and_output(tmp_path):
    result = run_process([sys.executable, "-c", "print('hello'); import sys; sys.stdout.flush()"], cwd=tmp_path,
                         timeout_s=30, sandbox="off", log_path=tmp_path / "log.txt")
    assert result.ok and result.output.strip() == "hello"
    assert "$ " in (tmp_path / "log.txt").read_text()
    slow = run_process([sys.executable, "-c", "import time; time.sleep(30)"], cwd=tmp_path, timeout_s=1, sandbox="off")
    assert slow.timed_out and slow.exit_code is None and "killed at the timeout of 1 s" in slow.note
    missing = run_process(["/nonexistent/lake", "build"], cwd=tmp_path, timeout_s=5, sandbox="off")
    assert missing.exit_code is None and "could not start" in missing.note
