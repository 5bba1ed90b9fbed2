"""The audit reads its files (``audit/record.json`` and the rest) through ``fyan.sandbox.safefile``:
a file an agent left as a link, a FIFO or an oversized file is not read, and the decision is a
rejection that names it (never a verdict on some other file's content)."""

from __future__ import annotations

import json
import os

import pytest

from fyan.audit.decide import RECORD, SOURCE, SOURCE_CHECK, AuditInputs, decide, read_files
from fyan.sandbox import safefile

STATEMENT = "theorem small_sq (n : Int) (h0 : 0 < n) (h1 : n < 10) : n * n < 100 := by\n  sorry"
PROBLEM = "Let $n$ be an integer with $0 < n$ and $n < 10$. Then $n \\cdot n < 100$."
SOURCE_JSON = {"statement": {"op": "forall", "var": "n", "domain": "ℤ", "quote": "$n$ be an integer", "args": [
    {"op": "implies", "args": [
        {"op": "and", "args": [{"op": "atom", "text": "0 < n", "quote": "$0 < n$"},
                               {"op": "atom", "text": "n < 10", "quote": "$n < 10$"}]},
        {"op": "atom", "text": "n * n < 100", "quote": r"$n \cdot n < 100$"}]}]}, "terms": []}
RECORD_JSON = {"root": "small_sq", "rows": [{"source": [s], "candidate": [c], "relation": "same"}
                                           for s, c in (("s1", "c1"), ("s4", "c3"), ("s5", "c5"), ("s6", "c6"))]}


def _inputs() -> AuditInputs:
    return AuditInputs(unit="u", kind="theorem", problem=PROBLEM, statement=STATEMENT, namespace="", roots=["small_sq"])


def _write(folder, record_path=None):
    (folder / "audit").mkdir(parents=True)
    (folder / SOURCE).write_text(json.dumps(SOURCE_JSON))
    (folder / SOURCE_CHECK).write_text(json.dumps({"verdict": "faithful", "objections": []}))
    if record_path is None:
        (folder / RECORD).write_text(json.dumps(RECORD_JSON))
    else:
        os.symlink(record_path, folder / RECORD)


def test_regular_audit_files_are_read_and_decided(tmp_path):
    _write(tmp_path)
    files = read_files(tmp_path)
    assert set(files) == {SOURCE, SOURCE_CHECK, RECORD} and files.refused == []
    assert decide(_inputs(), files).result.routing == "freeze"


def test_a_record_that_is_a_link_is_not_read_and_the_audit_is_rejected(tmp_path):
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps(RECORD_JSON))
    unit = tmp_path / "unit"
    _write(unit, record_path=outside)
    files = read_files(unit)
    assert RECORD not in files and any("symbolic link" in r for r in files.refused)
    result = decide(_inputs(), files).result
    assert not result.valid and result.routing == "reject"
    assert any(RECORD in e and "symbolic link" in e for e in result.errors)


def test_an_oversized_record_is_not_read(tmp_path, monkeypatch):
    _write(tmp_path)
    monkeypatch.setattr(safefile, "_limit", 64)
    files = read_files(tmp_path)
    assert RECORD not in files and any(RECORD in r for r in files.refused)
    assert decide(_inputs(), files).result.routing == "reject"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_place_of_the_record_never_blocks(tmp_path):
    (tmp_path / "audit").mkdir()
    os.mkfifo(tmp_path / RECORD)
    files = read_files(tmp_path)
    assert RECORD not in files and files.refused
