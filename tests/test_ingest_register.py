"""Registering an ingest's units: one filesystem sync and one transaction for all the files
(durability kept: a kill before the commit records nothing, one after it is rolled forward),
and per-unit files rendered in time linear in the edges and mentions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fyan.specifier import problem
from fyan.specifier.ingest import plan_ingest
from fyan.state import gateway as gateway_module
from fyan.state.faults import FAULT_EXIT_CODE
from fyan.state.gateway import Gateway, sha256_file
from fyan.state.store import Store

from tests.helpers import CHAIN_TEX, make_project

ROOT = Path(__file__).resolve().parents[1]
#: the one folder under units/ where ingest stages every unit's files (``gateway.INGEST_STAGING``)
INGEST_STAGING = ".ingest-staging"

CHILD = """
import sys
from fyan.project import Project
from fyan.specifier.ingest import ingest
from fyan.state.gateway import Gateway
project = Project.open(sys.argv[1])
ingest(project, Gateway(project))
print("not reached")
"""


def _book(n: int) -> str:
    parts = ["\\begin{definition}\\label{d0} An integer is \\textbf{nice} if it is even.\\end{definition}\n"]
    for i in range(1, n):
        parts.append(f"\\begin{{lemma}}\\label{{l{i}}} By \\ref{{{'d0' if i == 1 else f'l{i - 1}'}}} and "
                     f"\\ref{{d0}}, {i} is fine.\\end{{lemma}}\n\\begin{{proof}} Clear. \\end{{proof}}\n")
    return "".join(parts)


def test_registering_units_syncs_the_filesystem_once_not_each_file(tmp_path, monkeypatch):
    project = make_project(tmp_path / "p", _book(30))
    dag, files, meta, _ = plan_ingest(project)
    assert sum(len(f) for f in files.values()) == 59  # 30 problem.tex, 29 source_proof.tex
    syncs: list[str] = []
    monkeypatch.setattr(gateway_module.os, "fsync", lambda fd: syncs.append("fsync"))
    real = getattr(gateway_module, "sync_filesystem", None)
    monkeypatch.setattr(gateway_module, "sync_filesystem", lambda path: (syncs.append("syncfs"), real(path)),
                        raising=False)
    gw = Gateway(project)
    gw.register_units(dag, files, meta)
    assert syncs == ["syncfs"]
    for unit, unit_files in files.items():
        for rel, data in unit_files.items():
            assert (project.paths.unit(unit) / rel).read_bytes() == data
    assert not (project.paths.units / INGEST_STAGING).exists()
    assert not list(project.paths.units.glob("*/.staging"))
    gw.close()


def _crash(project, point: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FYAN_FAULT_AT": point, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", CHILD, str(project.paths.root)], env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_kill_after_the_commit_is_rolled_forward(tmp_path):
    project = make_project(tmp_path / "p", CHAIN_TEX)
    proc = _crash(project, "register:after_commit")
    assert proc.returncode == FAULT_EXIT_CODE, proc.stderr
    assert not (project.paths.unit("thm-c") / "problem.tex").exists()  # recorded, not yet put in place
    assert (project.paths.units / INGEST_STAGING).is_dir()
    gw = Gateway(project)
    gw.recover(sync_package=False)
    store = Store(project.paths.db)
    recorded = store.artifacts()
    assert {a.unit for a in recorded} == {"def-a", "lem-b", "thm-c"}
    for a in recorded:
        assert sha256_file(project.paths.root / a.path) == a.sha256
    assert not (project.paths.units / INGEST_STAGING).exists()
    store.close()
    gw.close()


def test_a_kill_before_the_commit_records_nothing_and_leaves_nothing(tmp_path):
    project = make_project(tmp_path / "p", CHAIN_TEX)
    proc = _crash(project, "register:after_copy")
    assert proc.returncode == FAULT_EXIT_CODE, proc.stderr
    gw = Gateway(project)
    gw.recover(sync_package=False)
    assert gw.store.artifacts() == [] and gw.store.units() == []
    assert not (project.paths.units / INGEST_STAGING).exists()
    assert not (project.paths.units / "thm-c").exists()
    gw.close()
    # and the ingest can be done again
    from fyan.specifier.ingest import ingest

    gw = Gateway(project)
    ingest(project, gw)
    assert (project.paths.unit("thm-c") / "problem.tex").is_file()
    gw.close()


def test_render_files_reads_the_edges_once_not_once_per_unit(tmp_path, monkeypatch):
    """The edges and mentions are indexed once: iterating them is counted, and must not grow
    with the number of units times the number of edges."""
    project = make_project(tmp_path / "p", _book(60))
    dag, _, _, report = plan_ingest(project)

    class Counted(list):
        reads = 0

        def __iter__(self):
            Counted.reads += 1
            return super().__iter__()

    from fyan.intake.tex import read_tex

    catalogue = read_tex(project.source_main)
    edges, mentions = Counted(dag.edges), Counted(report.mentions)
    problem.render_files(catalogue, dag.units, edges, "source/", project.config.intake.unit_kinds, mentions)
    assert len(dag.units) == 60 and Counted.reads <= 2


@pytest.mark.parametrize("unit", ["../x", "a/b"])
def test_a_forged_unit_id_is_refused_before_anything_is_staged(tmp_path, unit):
    project = make_project(tmp_path / "p", CHAIN_TEX)
    dag, files, meta, _ = plan_ingest(project)
    dag.units[1] = dag.units[1].model_copy(update={"id": unit})
    files[unit] = files.pop("lem-b")
    gw = Gateway(project)
    with pytest.raises(Exception, match="not a unit id"):
        gw.register_units(dag, files, meta)
    assert not [p for p in project.paths.units.rglob("*") if p.is_file()]
    gw.close()
