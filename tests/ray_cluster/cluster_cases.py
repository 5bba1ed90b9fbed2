"""The ``ray`` backend on a real Ray cluster of one machine (``ray.cluster_utils.Cluster``).

Run by ``tests/test_executor_ray.py`` inside a private network namespace with only loopback
(``unshare -n``; Ray then binds 127.0.0.1), never directly: the file name keeps the suite's
collection away from it. One cluster for the module (starting one takes ~15 s): a head without
the ``lean`` resource, Lean workers ``A`` and ``B`` (``lean: 2``), an agent-only worker ``C``
(no ``lean``) and a broken node ``E`` (its worker folder cannot be created; no CPU, so only a
test that asks for it by name runs there). Each node's name is in ``FYAN_TEST_NODE`` and its
worker folder is ``<tmp>/<name>``, so a build's working folder says where it ran.

The Lean toolchain is the test double ``tests/fakes/fake_lake.py`` (no Lean can run here); the
agents are the example's replayed responses, or (node removal) doubles that sleep and write
their outputs, standing in for model calls.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from fyan.cli import main  # noqa: E402
from fyan.orchestrator.engine import Engine  # noqa: E402
from fyan.stages import stage_spec  # noqa: E402
from fyan.state.gateway import CheckOutcome, Gateway, sha256_file  # noqa: E402
from fyan.state.models import RunStatus, Stage  # noqa: E402
from fyan.state.store import Store  # noqa: E402
from tests.conftest import DOUBLE_READABLE, EXAMPLE, FakeLake  # noqa: E402
from tests.instruments import bind_instruments  # noqa: E402
from tests.helpers import make_project  # noqa: E402
from fyan.specifier.ingest import ingest  # noqa: E402

LEAN_NODES = {"A", "B"}
MARKS = Path(os.environ.get("FYAN_TEST_MARKS", "/tmp"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, double_selftest):
    tmp = tmp_path_factory.mktemp("ray-cluster")
    (tmp / "fake-lake").mkdir()
    fake = FakeLake(tmp / "fake-lake")
    # confined as on a user's machine; the double reports through its instrument folder, bound
    # into confinements here and in every worker (tests/instruments_site/sitecustomize.py)
    os.environ.update({"FYAN_LEAN__LAKE": str(fake.path), "FYAN_FAKE_LOG": str(fake.log),
                       "FYAN_LEAN__SANDBOX": "auto", "RAY_USAGE_STATS_ENABLED": "0",
                       "FYAN_TEST_INSTRUMENTS": str(fake.instruments),
                       "FYAN_LEAN__SANDBOX_READABLE": json.dumps(DOUBLE_READABLE),
                       "FYAN_TEST_MARKS": str(tmp / "marks")})
    os.environ.pop("FYAN_FAKE_SCENARIO", None)
    bind_instruments(fake.instruments)
    (tmp / "marks").mkdir()
    global MARKS
    MARKS = tmp / "marks"

    def env(name: str, **extra: str) -> dict:
        return {"FYAN_TEST_NODE": name, "FYAN_WORKER_DIR": str(tmp / name), **extra}

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "env_vars": env("head"),
                                                      "object_store_memory": 80 * 2**20})
    nodes = {
        "A": c.add_node(num_cpus=2, resources={"lean": 2}, env_vars=env("A"), object_store_memory=80 * 2**20),
        "B": c.add_node(num_cpus=2, resources={"lean": 2}, env_vars=env("B"), object_store_memory=80 * 2**20),
        "C": c.add_node(num_cpus=2, env_vars=env("C"), object_store_memory=80 * 2**20),
        "E": c.add_node(num_cpus=0, resources={"broken": 1}, object_store_memory=80 * 2**20,
                        env_vars={"FYAN_TEST_NODE": "E", "FYAN_WORKER_DIR": "/dev/null/fyan-worker"}),
    }
    ray.init(address=c.address)
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the doubles below, on the workers
    yield {"cluster": c, "nodes": nodes, "tmp": tmp, "fake": fake}
    ray.shutdown()
    c.shutdown()


def _copy_example(dest: Path, extra: str) -> Path:
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".fyan", "units", "lean", "workspaces", "guidance",
                                                                 "skills"))
    with open(dest / "fyan.toml", "a") as fh:
        fh.write(extra)
    return dest


def _final_state(root: Path) -> dict:
    store = Store(root / ".fyan" / "state.db")
    files = ("problem.tex", "proof.md", "lemma_dag.json", "blueprint.md", "Statement.lean", "audit/record.json",
             "audit/result.json", "Basic.lean")
    state = {
        "status": {u: v.status.value for u, v in store.views(3).items()},
        "runs": sorted((r.unit, r.stage.value, r.status.value) for r in store.runs()),
        "files": {(a.unit, a.kind): a.sha256 for a in store.artifacts() if a.kind in files},
        "lean": sorted((p.relative_to(root / "lean").as_posix(), sha256_file(p))
                       for p in (root / "lean").rglob("*.lean") if p.parent != root / "lean"),
        # the root module imports the complete units in the order they completed
        "root": sorted((root / "lean" / "TasteNumberTheory.lean").read_text().splitlines()),
        "calls": sorted((c.unit or "", c.stage, c.request_key) for c in store.model_calls()),
        "gate": {},
    }
    for u in store.units():
        report = json.loads((root / "units" / u.id / "gate" / "report.json").read_text())
        state["gate"][u.id] = (report["passed"], [(c["name"], c["status"]) for c in report["checks"]])
    for (unit, kind), digest in state["files"].items():
        assert sha256_file(root / "units" / unit / kind) == digest  # recorded and on disk agree
    return state


def test_example_on_ray_ends_as_on_local_and_builds_only_on_lean_nodes(cluster, tmp_path, capsys):
    fake: FakeLake = cluster["fake"]
    local = _copy_example(tmp_path / "local", "\n[scheduler]\nparallelism = 3\n")
    assert main(["run", str(local), "--json"]) == 0
    capsys.readouterr()
    before = len(fake.calls())
    remote = _copy_example(tmp_path / "ray", '\n[scheduler]\nparallelism = 3\n[executor]\nbackend = "ray"\n')
    code = main(["run", str(remote), "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert json.loads(out)["counts"] == {"complete": 11}
    assert _final_state(remote) == _final_state(local)
    # where the compiles of the Ray run happened (units compile with plain `lean -R`):
    # the gate's in the Lean workers' folders
    tmp = cluster["tmp"]
    cwds = [c["cwd"] for c in fake.calls()[before:] if c["argv"][:1] == ["lean"] and "-R" in c["argv"]]
    on = {name: [c for c in cwds if c.startswith(str(tmp / name) + "/")] for name in ("head", "A", "B", "C", "E")}
    assert on["C"] == [] and on["head"] == [] and on["E"] == []  # no compile on a node without `lean`
    assert len(on["A"]) + len(on["B"]) >= 11  # every unit's gate compiled on a Lean worker
    assert not (remote / ".fyan" / "executor").exists()  # nothing ran in the head's own threads


# -- doubles for the node-removal run (pickled by value to the workers) ----------------------
def node_agent(session, ctx) -> None:
    """Stands in for a model-driven stage: marks where it runs, sleeps, writes the outputs."""
    node = os.environ.get("FYAN_TEST_NODE", "?")
    marks = Path(os.environ["FYAN_TEST_MARKS"])
    (marks / f"{node}-{ctx.run.id}").write_text("")
    time.sleep(0.6)
    for rel in stage_spec(ctx.run.stage).outputs or ("gate.txt",):
        ctx.write(rel, f"{rel} of {ctx.unit.id} on {node}\n")
    ctx.write("node.txt", node)


def no_model(stage):
    return None


PASS = {s: (lambda ctx: CheckOutcome(True, "ok (test double)")) for s in Stage}

#: nine lemmas in three chains of three (l3 uses l0, l6 uses l3, ...)
TEX = "".join("\\begin{lemma}\\label{l%d} L%d. %s\\end{lemma}\n" % (i, i, ("By \\ref{l%d}." % (i - 3)) if i >= 3 else "")
              for i in range(9))


def test_removing_a_node_during_a_run_loses_and_duplicates_nothing(cluster, tmp_path):
    project = make_project(tmp_path / "p", TEX,
                           '[intake]\nterm_edges = false\n[agents]\npost_completion = false\n'
                           '[scheduler]\nparallelism = 7\n[executor]\nbackend = "ray"\n')
    gw = Gateway(project, PASS)
    ingest(project, gw)
    agents = {s: node_agent for s in Stage}
    engine = Engine(project, gw, agents=agents, providers=no_model)
    result: dict = {}
    t = threading.Thread(target=lambda: result.setdefault("summary", engine.run()))
    t.start()
    deadline = time.monotonic() + 60
    while not any(p.name.startswith("B-") for p in MARKS.iterdir()):  # a task is running on B
        assert time.monotonic() < deadline, "no task reached node B"
        time.sleep(0.05)
    cluster["cluster"].remove_node(cluster["nodes"]["B"])
    t.join(timeout=240)
    assert not t.is_alive()
    summary = result["summary"]
    runs = gw.store.runs()
    assert summary.counts == {"complete": 9}  # lost: nothing
    lost = [r for r in runs if r.status is RunStatus.INTERRUPTED]
    assert lost and all(r.failure_kind is None for r in lost)  # interrupted, never failed
    assert not [r for r in runs if r.status is RunStatus.FAILED]
    for unit in {r.unit for r in runs}:  # duplicated: nothing — every stage succeeded exactly once
        assert [r.stage for r in runs if r.unit == unit and r.status is RunStatus.SUCCEEDED] == list(Stage)
    # at least one attempt was running on B when it went (others may have been placed there and
    # not started yet); each was dispatched again elsewhere, as the per-stage check above shows
    marked_b = {int(p.name.split("-")[1]) for p in MARKS.iterdir() if p.name.startswith("B-")}
    assert {r.id for r in lost} & marked_b
    for r in runs:  # builds (plan, prove, gate) only ever on Lean nodes
        node = (project.paths.root / r.attempt_dir / "node.txt")
        if r.status is RunStatus.SUCCEEDED and r.stage in (Stage.PLAN, Stage.PROVE, Stage.GATE):
            assert node.read_text() in LEAN_NODES, (r.unit, r.stage, node.read_text())
    gw.close()
    cluster["nodes"]["B"] = cluster["cluster"].add_node(
        num_cpus=2, resources={"lean": 2}, object_store_memory=80 * 2**20,
        env_vars={"FYAN_TEST_NODE": "B2", "FYAN_WORKER_DIR": str(cluster["tmp"] / "B2")})


def test_a_worker_that_cannot_import_its_inputs_fails_the_attempt_for_the_environment(cluster, tmp_path):
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from fyan.executor import Executor
    from fyan.executor.payload import decode_result, encode_spec
    from fyan.executor.ray_backend import _remote_execute

    project = make_project(tmp_path / "p", "\\begin{lemma}\\label{a} A. \\end{lemma}\n",
                           '[agents]\npost_completion = false\n[executor]\nbackend = "ray"\n')
    gw = Gateway(project, PASS)
    ingest(project, gw)
    gw.start_session()
    executor = Executor.for_project(project, gw)
    executor.start()
    run = gw.begin("a", Stage.REASON, 3, create_dir=False)
    spec = executor.inputs.spec(run, "attempt", gw.head_token)
    node_e = cluster["nodes"]["E"].node_id
    fn = ray.remote(max_retries=0)(_remote_execute).options(
        num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_e, soft=False))
    result = decode_result(ray.get(fn.remote(encode_spec(spec), None, executor.backend._blobs,
                                             project.config.lean.toolchain)))
    assert result.error_kind == "environment" and "cannot" in result.error and result.node.startswith("ray:")
    done = executor.collect(run, result, spec.inputs_digest)
    assert done.status is RunStatus.FAILED and done.failure_kind.value == "environment"
    assert gw.store.views(3)["a"].status.value == "blocked"  # for this session; not a proof failure
    executor.close()
    gw.close()
