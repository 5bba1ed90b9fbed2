"""The executor between the run loop and the attempts, on the ``local`` backend.

Every attempt crosses the same boundary as on Ray — an encoded task out, an encoded result
back — so these tests exercise the code a Ray worker runs (``fyan.executor.worker.execute``)
and the head's taking in of results. Agents and checks are test doubles standing in for the
model calls and the Lean toolchain where a test says so; the Ray cluster itself is tested in
``tests/ray_cluster/cluster_cases.py`` (launched by ``tests/test_executor_ray.py``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgpack
import pytest

from fyan.errors import TransitionError
from fyan.executor import Executor
from fyan.executor.core import LocalBackend, TaskLost
from fyan.executor.mirror import Site
from fyan.executor.payload import PAYLOAD_VERSION, ModelCall, TaskResult, decode_result, decode_spec, encode_spec
from fyan.executor.worker import Runtime, execute
from fyan.orchestrator.engine import Engine
from fyan.state.models import FailureKind, RunStatus, Stage
from tests.helpers import ingested
from tests.test_orchestrator import AGENTS, PASS, no_model  # doubles for the model-driven stages and checks


def _setup(tmp_path, agents=AGENTS):
    project, gw = ingested(tmp_path / "p", checks=PASS, extra_toml="[agents]\npost_completion = false\n")
    gw.start_session()
    executor = Executor(project, gw, LocalBackend(project, Runtime(agents=agents, providers=no_model)))
    return project, gw, executor


def test_an_attempt_crosses_the_boundary_and_the_head_publishes_it(tmp_path):
    project, gw, executor = _setup(tmp_path)
    run = gw.begin("def-a", Stage.REASON, 3, create_dir=False)
    spec = executor.inputs.spec(run, "attempt", gw.head_token)
    assert decode_spec(encode_spec(spec)) == spec  # the payload survives its encoding
    assert "units/def-a/problem.tex" in spec.unit.files and spec.upstream == []
    done = executor.attempt(run)
    assert done.status is RunStatus.SUCCEEDED
    assert (project.paths.unit("def-a") / "proof.md").read_text() == "proof.md of def-a\n"
    # the node's copy of the project is not the project: the attempt folder there is gone
    mirror = project.paths.state / "executor" / "projects" / gw.project_id
    assert (mirror / ".fyan" / "state.db").is_file() and not (mirror / run.attempt_dir).exists()


class _Counting(LocalBackend):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.fetched: list[str] = []

    def fetch(self, keys):
        self.fetched += keys
        return super().fetch(keys)


def test_upstream_units_travel_as_interfaces_fetched_once(tmp_path):
    project, gw = ingested(tmp_path / "p", checks=PASS, extra_toml="[agents]\npost_completion = false\n")
    backend = _Counting(project, Runtime(agents=AGENTS, providers=no_model))
    summary = Engine(project, gw, agents=AGENTS, providers=no_model, executor=Executor(project, gw, backend)).run()
    assert summary.counts == {"complete": 3}
    mirror = project.paths.state / "executor" / "projects" / gw.project_id
    # lem-b depends on def-a: def-a's statement and proof module reached the node as its interface
    assert (mirror / "units" / "def-a" / "problem.tex").read_bytes() == \
        (project.paths.unit("def-a") / "problem.tex").read_bytes()
    module = mirror / "lean" / project.config.lean_lib / gw.store.unit("def-a").module / "Basic.lean"
    assert module.read_bytes() == (project.paths.unit("def-a") / "Basic.lean").read_bytes()
    units = [k for k in backend.fetched if k.startswith("unit:")]
    # def-a is needed by the five attempts of lem-b (and thm-c's through lem-b's interface): fetched once
    assert sorted(units) == sorted(set(units)) and len(units) == 2
    # the unit under work is never in the node's Lean package; a complete one is
    assert not (mirror / "lean" / project.config.lean_lib / gw.store.unit("thm-c").module).exists()


def test_a_result_of_a_previous_head_is_refused(tmp_path):
    project, gw, executor = _setup(tmp_path)
    run = gw.begin("def-a", Stage.REASON, 3, create_dir=False)
    old_head = gw.head_token
    spec = executor.inputs.spec(run, "attempt", old_head)
    result = decode_result(execute(encode_spec(spec), executor.backend.runtime, executor.backend.site, executor.backend.fetch))
    gw.start_session()  # the head restarted: a new session token
    with pytest.raises(TransitionError, match="comes from another head"):
        executor.collect(run, result, spec.inputs_digest)
    after = gw.store.run(run.id)
    assert after.status is RunStatus.INTERRUPTED  # not a failure: dispatched again
    assert not (project.paths.unit("def-a") / "proof.md").exists()
    assert gw.store.views(3)["def-a"].status.value == "ready"


def test_a_result_the_head_no_longer_expects_is_refused(tmp_path):
    project, gw, executor = _setup(tmp_path)
    run = gw.begin("def-a", Stage.REASON, 3, create_dir=False)
    spec = executor.inputs.spec(run, "attempt", gw.head_token)
    result = decode_result(execute(encode_spec(spec), executor.backend.runtime, executor.backend.site, executor.backend.fetch))
    gw.interrupt([run.id], "interrupted: node lost")  # the head gave up on it and dispatched again
    second = gw.begin("def-a", Stage.REASON, 3, create_dir=False)
    with pytest.raises(TransitionError, match="not running"):
        executor.collect(run, result, spec.inputs_digest)
    with pytest.raises(TransitionError, match=f"result of run {run.id} handed in for run {second.id}"):
        executor.collect(second, result, spec.inputs_digest)  # another run's result: this one is void too
    assert gw.store.run(second.id).status is RunStatus.INTERRUPTED
    third = gw.begin("def-a", Stage.REASON, 3, create_dir=False)
    assert executor.attempt(third).status is RunStatus.SUCCEEDED
    succeeded = [r for r in gw.store.runs("def-a") if r.status is RunStatus.SUCCEEDED]
    assert [r.id for r in succeeded] == [third.id]  # completed once
    # the gateway itself refuses a stale fence, whoever calls it
    third = gw.begin("def-a", Stage.PLAN, 3, create_dir=False)
    with pytest.raises(TransitionError, match="another head"):
        gw.finish(third, fence="0" * 32)


def test_a_result_computed_on_other_inputs_is_refused(tmp_path):
    project, gw, executor = _setup(tmp_path)
    run = gw.begin("def-a", Stage.REASON, 3, create_dir=False)
    spec = executor.inputs.spec(run, "attempt", gw.head_token)
    result = decode_result(execute(encode_spec(spec), executor.backend.runtime, executor.backend.site, executor.backend.fetch))
    forged = result.model_copy(update={"inputs_digest": "f" * 64})
    with pytest.raises(TransitionError, match="other inputs"):
        executor.collect(run, forged, spec.inputs_digest)
    assert gw.store.run(run.id).status is RunStatus.INTERRUPTED


def test_files_outside_the_attempt_folder_are_refused(tmp_path):
    project, gw, executor = _setup(tmp_path)
    for bad in ("../../../units/def-a/proof.md", "/etc/x", "a/../../b"):
        run = gw.begin("def-a", Stage.REASON, 3, create_dir=False)
        result = TaskResult(head=gw.head_token, run_id=run.id, unit="def-a", stage="reason", node="t",
                            files={"proof.md": b"x" * 50, bad: b"evil"})
        done = executor.collect(run, result)
        assert done.status is RunStatus.FAILED and done.failure_kind is FailureKind.ENVIRONMENT
        assert "refused path" in done.reason
        gw.start_session()  # an environment failure blocks for its session only
    assert not (project.paths.unit("def-a") / "proof.md").exists()
    assert not (tmp_path / "b").exists()


def test_model_calls_made_on_a_node_are_recorded_by_the_head(tmp_path):
    project, gw, executor = _setup(tmp_path)
    run = gw.begin("def-a", Stage.REASON, 3, create_dir=False)
    call = ModelCall(stage="reason", unit="def-a", provider="p", model="m", request_key="k", tokens_in=3, tokens_out=4,
                     cost=0.5, latency_s=1.0, cache_hit=False, replay=False, ts=1.0)
    result = TaskResult(head=gw.head_token, run_id=run.id, unit="def-a", stage="reason", node="t",
                        files={"proof.md": b"p"}, calls=[call, call], cassette_append=b'{"key": "k"}\n')
    executor.collect(run, result)
    calls = gw.store.model_calls("def-a")
    assert [(c.run_id, c.tokens_in, c.cost) for c in calls] == [(run.id, 3, 0.5), (run.id, 3, 0.5)]
    cassette = project.paths.root / project.config.agents.replay_file
    assert cassette.read_text() == '{"key": "k"}\n'


def test_a_node_that_cannot_import_its_inputs_fails_with_an_environment_reason(tmp_path):
    project, gw, executor = _setup(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    broken = Site(base=blocker / "node", name="broken")  # the node's folder cannot be created
    run = gw.begin("def-a", Stage.REASON, 3, create_dir=False)
    spec = executor.inputs.spec(run, "attempt", gw.head_token)
    result = decode_result(execute(encode_spec(spec), None, broken, executor.backend.fetch))
    assert result.error_kind == "environment" and "cannot" in result.error
    done = executor.collect(run, result)
    assert done.status is RunStatus.FAILED and done.failure_kind is FailureKind.ENVIRONMENT
    assert gw.store.views(3)["def-a"].status.value == "blocked"  # for this session only
    # another Fyan's payload: refused with the reason, not misread
    raw = msgpack.unpackb(encode_spec(spec), raw=False)
    raw["version"] = PAYLOAD_VERSION + 1
    foreign = decode_result(execute(msgpack.packb(raw, use_bin_type=True), None, executor.backend.site, executor.backend.fetch))
    assert foreign.error_kind == "environment" and "payload version" in foreign.error
    garbage = decode_result(execute(b"\xc1 not msgpack", None, executor.backend.site, executor.backend.fetch))
    assert garbage.error_kind == "environment" and "not a Fyan payload" in garbage.error


def test_missing_interface_is_an_environment_failure(tmp_path):
    project, gw, executor = _setup(tmp_path)
    Engine(project, gw, agents=AGENTS, providers=no_model, executor=executor, only={"def-a"}).run()
    gw.start_session()
    run = gw.begin("lem-b", Stage.REASON, 3, create_dir=False)
    spec = executor.inputs.spec(run, "attempt", gw.head_token)
    fresh = Site(base=tmp_path / "other-node", name="other")
    result = decode_result(execute(encode_spec(spec), executor.backend.runtime, fresh, lambda keys: {}))
    assert result.error_kind == "environment" and "interface" in result.error


class _LosesFirst(LocalBackend):
    """Stands in for a Ray node that dies during the first attempt of each unit's reason stage."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.lost: list[str] = []

    def run(self, payload, **kw):
        spec = decode_spec(payload)
        if spec.run["stage"] == "reason" and spec.unit.unit not in self.lost:
            self.lost.append(spec.unit.unit)
            raise TaskLost("NodeDiedError: the node was removed")
        return super().run(payload, **kw)


def test_a_lost_node_interrupts_the_attempt_which_runs_again_and_completes_once(tmp_path):
    project, gw = ingested(tmp_path / "p", checks=PASS, extra_toml="[agents]\npost_completion = false\n")
    backend = _LosesFirst(project, Runtime(agents=AGENTS, providers=no_model))
    executor = Executor(project, gw, backend)
    summary = Engine(project, gw, agents=AGENTS, providers=no_model, executor=executor).run()
    assert summary.counts == {"complete": 3}
    runs = gw.store.runs()
    lost = [r for r in runs if r.status is RunStatus.INTERRUPTED]
    assert sorted(r.unit for r in lost) == sorted(backend.lost) and len(lost) == 3
    assert all("NodeDiedError" in r.reason and r.failure_kind is None for r in lost)  # never a failure
    for unit in ("def-a", "lem-b", "thm-c"):
        ok = [r.stage for r in runs if r.unit == unit and r.status is RunStatus.SUCCEEDED]
        assert ok == list(Stage)  # every stage succeeded exactly once: nothing duplicated


def test_the_gate_verdict_comes_from_the_worker_report_for_the_same_unit(tmp_path):
    from fyan.gates.stages import check_gate
    from fyan.state.gateway import CheckContext

    project, gw, executor = _setup(tmp_path)
    unit = gw.store.unit("def-a")
    run = gw.begin("def-a", Stage.REASON, 3, create_dir=False)
    report = {"unit": "lem-b", "passed": True, "roots": [], "checks": [], "created_at": 0.0}
    ctx = CheckContext(project, gw.store, unit, run, tmp_path, evidence={"gate_report": report})
    out = check_gate(ctx)
    assert not out.passed and "refused" in out.reason  # another unit's report never passes this one
    ctx.evidence = {"gate_report": {**report, "unit": "def-a"}}
    assert check_gate(ctx).passed


def test_placement_keeps_tasks_within_the_cluster_capacity(tmp_path):
    project, gw, executor = _setup(tmp_path)

    class Capped(LocalBackend):
        def capacity(self):
            return {"slots": 3, "lean": 1}

    executor.backend = Capped(project, None)
    assert executor.reserve(Stage.GATE) and not executor.reserve(Stage.PROVE)  # one lean unit
    assert executor.reserve(Stage.REASON) and executor.reserve(Stage.AUDIT)  # agent-only: any slot
    assert not executor.reserve(Stage.REASON)  # three slots taken
    executor.release(Stage.GATE)
    assert executor.reserve(Stage.PLAN)


def test_the_example_runs_the_same_through_the_boundary(example, fake_lake, capsys):
    """The replayed example matches its cassette request by request: every prompt a worker
    rendered from its copy of the project is the prompt the head would have rendered."""
    from fyan.cli import main

    assert main(["run", str(example), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["counts"] == {"complete": 11}, out.get("blocked")
    mirror_root = example / ".fyan" / "executor" / "projects"
    assert mirror_root.is_dir() and len(os.listdir(mirror_root)) == 1


def test_the_replica_writer_refuses_a_project_store(tmp_path):
    from fyan.state.replica import Replica, ReplicaError

    project, gw = ingested(tmp_path / "p", checks=PASS)
    with pytest.raises(ReplicaError, match="only its gateway writes it"):
        Replica(project.paths.db)
    replica = Replica(tmp_path / "copy" / ".fyan" / "state.db")
    with pytest.raises(ReplicaError, match="unknown table"):
        replica.put_unit("u", {"model_calls": []}, 1)


def test_doctor_worker_says_whether_a_node_can_take_lean_tasks(tmp_path, fake_lake, monkeypatch, capsys):
    """The Lean toolchain is the test double ``fake_lake`` (it reports the default pin's version).
    A worker node needs Ray: without it (the README's test install has no Ray) the next test checks
    what doctor says instead."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]'; .ci/run installs it)")
    from fyan.cli import main
    from fyan.executor.ray_backend import packages_dir

    monkeypatch.setenv("FYAN_WORKER_DIR", str(tmp_path / "worker"))
    assert main(["doctor", "--worker", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and '--resources \'{"lean": ' in report["command"]
    assert main(["doctor", "--worker", "--toolchain", "leanprover/lean4:v4.0.0"]) == 3  # another pin
    assert "toolchain mismatch" in capsys.readouterr().out
    project, _ = ingested(tmp_path / "p", extra_toml='[lean]\nextra_imports = ["Mathlib"]\n')
    assert main(["doctor", str(project.paths.root), "--worker"]) == 3  # needs Mathlib, none built here
    assert "needs Lake packages" in capsys.readouterr().out
    (packages_dir(project.config.lean.toolchain) / "mathlib").mkdir(parents=True)
    assert main(["doctor", str(project.paths.root), "--worker"]) == 0
    assert "This node can take Lean tasks" in capsys.readouterr().out


def test_doctor_worker_without_ray_says_how_to_install_it(tmp_path, fake_lake, monkeypatch, capsys):
    import importlib.util

    from fyan.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    monkeypatch.setenv("FYAN_WORKER_DIR", str(tmp_path / "worker"))
    assert main(["doctor", "--worker", "--json"]) == 3
    report = json.loads(capsys.readouterr().out)
    checks = {c["name"]: c for c in report["checks"]}
    assert not report["ok"] and checks["toolchain"]["ok"] is True
    assert checks["ray"]["ok"] is False and "pip install 'fyan[ray]'" in checks["ray"]["detail"]


def test_doctor_worker_without_lean(tmp_path, no_lake, monkeypatch, capsys):
    from fyan.cli import main

    monkeypatch.setenv("FYAN_WORKER_DIR", str(tmp_path / "worker"))
    assert main(["doctor", "--worker"]) == 3
    out = capsys.readouterr().out
    assert "[FAIL] toolchain: Lean toolchain not found" in out and "without `lean`" in out


def test_executor_configuration_is_checked(tmp_path, monkeypatch):
    from fyan.config import FyanConfig, config_from_snapshot, config_snapshot, load_config
    from fyan.errors import ConfigError

    path = tmp_path / "fyan.toml"
    for good in ("auto", "local", "10.1.2.3:6379", "ray://head:10001"):
        path.write_text(f'[project]\nname = "x"\nsource = "s"\n[executor]\nbackend = "ray"\naddress = "{good}"\n')
        assert load_config(path).executor.address == good
    path.write_text('[project]\nname = "x"\nsource = "s"\n[executor]\nbackend = "slurm"\naddress = "http://x"\n')
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert "executor.backend" in str(e.value) and "executor.address" in str(e.value)
    # a snapshot is the head's configuration: the worker's environment does not change it
    head = FyanConfig(project={"name": "x", "source": "s"}, lean={"lake": "/head/lake"})
    monkeypatch.setenv("FYAN_LEAN__LAKE", "/worker/lake")
    assert config_from_snapshot(config_snapshot(head)).lean.lake == "/head/lake"


def test_ray_backend_without_ray_says_how_to_install_it(tmp_path, monkeypatch):
    import sys

    from fyan.errors import ConfigError

    project, gw = ingested(tmp_path / "p", checks=PASS, extra_toml='[executor]\nbackend = "ray"\n')
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    with pytest.raises(ConfigError, match=r"pip install 'fyan\[ray\]'"):
        Executor.for_project(project, gw)


def test_a_unit_written_by_another_process_is_put_in_place_again(tmp_path):
    """Worker processes of one node share its copy of the project; each keeps caches of what it
    wrote. When another process wrote the unit in between (the unit lock's generation token
    changed), the caches are dropped and the files and rows are written again."""
    import hashlib

    from fyan.executor.mirror import Mirror

    project, gw, executor = _setup(tmp_path)
    run = gw.begin("def-a", Stage.REASON, 3, create_dir=False)
    spec = executor.inputs.spec(run, "attempt", gw.head_token)
    site = Site(base=tmp_path / "node", name="n")
    mirror = Mirror.open(site, spec.project_id)
    lib = project.config.lean_lib
    with mirror.unit_lock("def-a"):
        mirror.put_task(spec, executor.backend.fetch, lib)
    problem = mirror.root / "units" / "def-a" / "problem.tex"
    original = problem.read_bytes()
    # another process of the node writes the unit (another content) and takes the lock after us
    problem.write_bytes(b"written by another process")
    lock = mirror._locks / hashlib.sha256(b"def-a").hexdigest()[:32]
    lock.write_bytes(os.urandom(16).hex().encode())
    with mirror.unit_lock("def-a"):
        mirror.put_task(spec, executor.backend.fetch, lib)
    assert problem.read_bytes() == original


class _OtherFyanOnTheNode(LocalBackend):
    """Stands in for a worker with another Fyan: it reads payloads of another version."""

    def run(self, payload, **kw):
        raw = msgpack.unpackb(payload, raw=False)
        raw["version"] = PAYLOAD_VERSION + 1
        return super().run(msgpack.packb(raw, use_bin_type=True), **kw)


def test_a_node_that_cannot_read_the_task_fails_the_attempt_once_for_the_environment(tmp_path):
    project, gw = ingested(tmp_path / "p", checks=PASS, extra_toml="[agents]\npost_completion = false\n")
    executor = Executor(project, gw, _OtherFyanOnTheNode(project, Runtime(agents=AGENTS, providers=no_model)))
    summary = Engine(project, gw, agents=AGENTS, providers=no_model, executor=executor).run()
    runs = gw.store.runs()
    assert len(runs) == 1 and runs[0].status is RunStatus.FAILED  # not interrupted and dispatched forever
    assert runs[0].failure_kind is FailureKind.ENVIRONMENT and "payload version" in runs[0].reason
    assert summary.counts == {"blocked": 3}


def _open_mirror_in_a_process(base: str, project_id: str, start: float) -> str:
    """One node process's first task: sets up the project's mirror (returns the error or "")."""
    import time as _time

    from fyan.executor.mirror import Mirror, MirrorError, Site

    _time.sleep(max(0.0, start - _time.time()))
    try:
        Mirror.open(Site(base=Path(base), name="n"), project_id)
    except MirrorError as e:
        return str(e)
    return ""


def test_concurrent_first_tasks_set_up_one_mirror(tmp_path):
    """The family of first-use races on a node: the first tasks of a run start together (the DAG's
    roots), in threads of one process (the local backend) and in several worker processes (Ray),
    and each sets up the project's mirror and its replica database. None may fail ("database is
    locked" made a root unit blocked as an environment problem, seen in CI)."""
    import threading
    import time
    from concurrent.futures import ProcessPoolExecutor

    from fyan.executor.mirror import Mirror, MirrorError, Site

    for round_ in range(12):
        site = Site(base=tmp_path / f"threads{round_}", name="n")
        barrier = threading.Barrier(8)
        got: list[object] = []

        def first_task() -> None:
            barrier.wait()
            try:
                got.append(Mirror.open(site, "p" * 32))
            except MirrorError as e:
                got.append(e)

        threads = [threading.Thread(target=first_task) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not [g for g in got if isinstance(g, MirrorError)], got
        assert len({id(g) for g in got}) == 1  # one mirror per process
    with ProcessPoolExecutor(6) as pool:
        for round_ in range(6):
            start = time.time() + 0.5
            errors = list(pool.map(_open_mirror_in_a_process, [str(tmp_path / f"procs{round_}")] * 6,
                                   ["q" * 32] * 6, [start] * 6))
            assert errors == [""] * 6, errors
