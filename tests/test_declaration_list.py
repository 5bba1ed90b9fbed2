"""The declaration list the trusted inspector writes (``fyan-inspector --declarations FILE``) and
the index built from it once per toolchain and dependency set (``fyan.prover.environment``).

The Lean side (``declarationLines`` in ``lake-template/inspector/FyanInspector.lean``) cannot be
compiled here (the core tier has no ``Init``/``Lean``: ``tests/lean_core.py``), so the list is
``tests/data/inspector-declarations.jsonl``, written by hand in the format that code writes
(first line ``{format, nonce, count}``, then one ``{name, kind, module, signature}`` per line, the
signature as ``type_pp`` prints a type); ``fyan selftest`` builds the inspector on a real
toolchain. It follows docs/lean-contract.md, "The trusted inspector", the ``--declarations`` row."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from fyan.prover.environment import declaration_key, ensure_index, read_inspector_list
from fyan.prover.search import DeclarationIndex, IndexError_

RECORDED = Path(__file__).parent / "data" / "inspector-declarations.jsonl"


def raw(tmp_path: Path, nonce: str, edit=lambda lines: lines) -> Path:
    lines = RECORDED.read_text().replace("NONCE", nonce).splitlines()
    path = tmp_path / f"raw-{nonce}.jsonl"
    path.write_text("\n".join(edit(lines)) + "\n")
    return path


def test_the_inspectors_list_is_read_strictly(tmp_path):
    records = read_inspector_list(raw(tmp_path, "n1"), "n1")
    assert [r.name for r in records] == ["Nat.add_comm", "Nat.succ_le_of_lt", "Nat", "Nat.gcd"]
    assert records[0].module == "Init.Data.Nat.Basic" and records[0].docstring is None
    with pytest.raises(IndexError_, match="does not echo this run's nonce"):
        read_inspector_list(raw(tmp_path, "n2"), "n1")
    with pytest.raises(IndexError_, match="the header says 4 declarations, the file has 3"):
        read_inspector_list(raw(tmp_path, "n3", lambda ls: ls[:-1]), "n3")
    with pytest.raises(IndexError_, match="line 3"):
        read_inspector_list(raw(tmp_path, "n4", lambda ls: ls[:2] + ['{"name": "x", "kind": "def"}'] + ls[3:]), "n4")
    with pytest.raises(IndexError_, match="not a fyan-inspector-declarations/1 header"):
        read_inspector_list(raw(tmp_path, "n5", lambda ls: ls[1:]), "n5")
    with pytest.raises(IndexError_, match="wrote no declaration list"):
        read_inspector_list(tmp_path / "absent.jsonl", "n6")


def project(tmp_path: Path, manifest: dict | None = None):
    lean, state = tmp_path / "lean", tmp_path / ".fyan"
    lean.mkdir(parents=True, exist_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    (lean / "lean-toolchain").write_text("leanprover/lean4:v4.35.0\n")
    if manifest is not None:
        (lean / "lake-manifest.json").write_text(json.dumps(manifest))
    return SimpleNamespace(paths=SimpleNamespace(lean=lean, state=state))


def test_the_index_is_built_once_per_toolchain_and_dependency_set(tmp_path):
    runs: list[str] = []

    def inspector(path: Path, nonce: str) -> None:  # stands in for `fyan-inspector --declarations path`
        runs.append(nonce)
        path.write_text(raw(tmp_path, nonce).read_text())

    p = project(tmp_path / "p")
    cache = tmp_path / "cache"
    header, ran = ensure_index(p, cache, inspector)
    assert ran and len(runs) == 1 and header.count == 4 and (header.toolchain, header.dependencies) == declaration_key(p)
    index = DeclarationIndex(p.paths.state / "declarations.sqlite", expect=declaration_key(p))
    assert index.lookup("Nat.gcd").module == "Init.Data.Nat.Gcd" and index.lookup("Nat.lcm") is None
    assert index.search("add comm").hits[0].name == "Nat.add_comm"
    index.close()
    # the same key again: no inspector run, the cached list and the index are reused
    assert ensure_index(p, cache, inspector) == (header, False) and len(runs) == 1
    # another project with the same key reads the cached list without running the inspector
    q = project(tmp_path / "q")
    assert ensure_index(q, cache, inspector) == (header, False) and len(runs) == 1
    assert (q.paths.state / "declarations.sqlite").is_file()
    # another dependency set is another key: the inspector runs, and the old index is never read as this one's
    project(tmp_path / "p", {"packages": [{"name": "mathlib", "type": "git", "rev": "a" * 40}]})
    new, ran = ensure_index(p, cache, inspector)
    assert ran and len(runs) == 2 and new.dependencies != header.dependencies
    assert not list((cache / "declarations").glob("*/raw-*"))  # the raw lists are not kept


def test_a_failed_or_forged_run_leaves_no_list(tmp_path):
    p = project(tmp_path / "p")

    def forged(path: Path, nonce: str) -> None:
        path.write_text(raw(tmp_path, "not-the-nonce").read_text())

    with pytest.raises(IndexError_, match="nonce"):
        ensure_index(p, tmp_path / "cache", forged)
    assert not list((tmp_path / "cache").rglob("*.jsonl")) and not (p.paths.state / "declarations.sqlite").exists()
