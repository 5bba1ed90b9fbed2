"""The ``ray`` backend: each task is a Ray task on a node of a cluster, placed by resources.

Needs ``pip install 'fyan[ray]'`` on the head and on every worker (the same Fyan version:
a node with another payload version refuses tasks with an environment reason). The cluster is
Ray's own (``ray start --head`` / ``ray start --address … --resources '{"lean": N}'``; Slurm
and Kubernetes through Ray's documentation); Fyan only joins it (``[executor] address``).

* A task declares ``num_cpus = [executor] task_cpus``, ``memory`` (``[lean] memory_limit_mb``
  for stages with Lean builds, ``[executor] agent_memory_mb`` otherwise) and, for plan, prove
  and gate, one unit of the custom resource ``lean``, which only nodes with the project's
  pinned toolchain and built dependencies advertise (``fyan worker check`` says whether a node
  qualifies). Tasks are never retried by Ray (``max_retries = 0``): a lost node is reported to
  the executor, which records the attempt interrupted and dispatches it again under a new run
  id — so a result can only ever come back for the run the head expects.
* Interfaces, the prompts bundle and the cassette are kept by a small actor on the head's node
  (``_Blobs``; no CPU) and fetched by the workers that lack them, once per node.
* On a worker, ``FYAN_WORKER_DIR`` (default ``~/.cache/fyan/worker``) holds the node's mirrors
  and, in ``lean/<pin>/.lake/packages`` (``<pin>`` = the toolchain with ``/`` and ``:`` as
  ``-``), the built dependencies (Mathlib) tasks link to; ``FYAN_LEAN__LAKE`` on the worker
  names its ``lake`` (else the head's ``[lean] lake`` if that path exists there, else ``PATH``
  and ``~/.elan/bin``).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from fyan.errors import ConfigError, FyanError
from fyan.executor.core import LEAN_RESOURCE, TaskLost, TaskRefused
from fyan.executor.mirror import Site
from fyan.executor.worker import Runtime, execute

#: seconds between two reads of the cluster's resources
CAPACITY_REFRESH_S = 2.0
#: seconds a worker waits for a blob the head has put but the actor has not received yet
FETCH_WAIT_S = 10.0


def pin_slug(toolchain: str) -> str:
    """A folder name for a toolchain pin (``leanprover/lean4:v4.31.0`` →
    ``leanprover-lean4-v4.31.0``)."""
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in toolchain.strip())


def worker_dir() -> Path:
    """This node's folder for Fyan (``FYAN_WORKER_DIR``, default ``~/.cache/fyan/worker``)."""
    return Path(os.environ.get("FYAN_WORKER_DIR") or Path.home() / ".cache" / "fyan" / "worker")


def packages_dir(toolchain: str, base: Path | None = None) -> Path:
    """Where this node keeps the built Lake dependencies for ``toolchain``."""
    return (base or worker_dir()) / "lean" / pin_slug(toolchain) / ".lake" / "packages"


def _node_site(toolchain: str) -> Site:
    import ray

    base = worker_dir()
    packages = packages_dir(toolchain, base)
    node = ray.get_runtime_context().get_node_id()
    return Site(base=base, lake_packages=packages if packages.is_dir() else None,
                lake=os.environ.get("FYAN_LEAN__LAKE"), name=f"ray:{node[:12]}", remote=True)


#: runtimes (test and benchmark doubles) already unpickled in this worker process, by key
_runtimes: dict[str, Runtime | None] = {}


def _runtime(runtime: Any) -> Runtime | None:
    """``runtime`` is None, a Runtime, or ``(key, [ObjectRef])``: fetched and unpickled once per
    worker process, not once per task."""
    if runtime is None or isinstance(runtime, Runtime):
        return runtime
    import ray

    key, ref = runtime
    if key not in _runtimes:
        _runtimes[key] = ray.get(ref[0])
    return _runtimes[key]


def _remote_execute(payload: bytes, runtime: Any, blobs: Any, toolchain: str) -> bytes:
    """The Ray task (runs on a worker node)."""
    import ray

    runtime = _runtime(runtime)

    def fetch(keys: list[str]) -> dict[str, bytes]:
        # the head puts blobs without waiting: one it put just before handing out this task may
        # still be on its way to the actor (calls of two callers are not ordered)
        got: dict[str, bytes] = {}
        deadline = time.monotonic() + FETCH_WAIT_S
        while True:
            got.update(ray.get(blobs.get.remote([k for k in keys if k not in got])))
            if len(got) == len(keys) or time.monotonic() > deadline:
                return got
            time.sleep(0.02)

    return execute(payload, runtime, _node_site(toolchain), fetch)


class _Blobs:
    """Content the workers fetch by key (interfaces, prompts, cassette); lives on the head node."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def put(self, key: str, data: bytes) -> None:
        self.data[key] = data

    def get(self, keys: list[str]) -> dict[str, bytes]:
        return {k: self.data[k] for k in keys if k in self.data}


class RayBackend:
    name = "ray"

    def __init__(self, address: str, runtime: Runtime | None, toolchain: str, task_cpus: float = 1.0,
                 local_lean: int = 0) -> None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ConfigError("[executor] backend = \"ray\" needs Ray: pip install 'fyan[ray]'",
                              hint="or set [executor] backend = \"local\"") from None
        self.address = address
        self.runtime = runtime
        self.toolchain = toolchain
        self.task_cpus = task_cpus
        self.local_lean = local_lean
        self._owns_ray = False
        self._blobs: Any = None
        self._runtime_ref: Any = None
        self._fn: Any = None
        self._cap: dict[str, int] | None = None
        self._cap_at = 0.0
        self._lock = threading.Lock()
        self._refs: set[Any] = set()

    def start(self) -> None:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if not ray.is_initialized():
            try:
                if self.address == "local":  # this machine offers `lean` when it has the toolchain
                    ray.init(namespace="fyan", include_dashboard=False, log_to_driver=False,
                             resources={LEAN_RESOURCE: self.local_lean} if self.local_lean else None)
                else:
                    ray.init(address=self.address, namespace="fyan", log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise FyanError(f"cannot join the Ray cluster at [executor] address = {self.address!r}: {e}",
                                hint="start it first (`ray start --head` here, then `ray start --address <head>:6379 "
                                     "--resources '{\"lean\": N}'` on each Lean worker), or set [executor] address",
                                retryable=False) from None
            self._owns_ray = True
        here = ray.get_runtime_context().get_node_id()
        self._blobs = ray.remote(num_cpus=0)(_Blobs).options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False)).remote()
        self._fn = ray.remote(max_retries=0)(_remote_execute)
        # passed as (key, [ref]): inside a list Ray does not resolve the reference per task
        self._runtime_ref = (os.urandom(8).hex(), [ray.put(self.runtime)]) if self.runtime is not None else None

    def put(self, key: str, data: bytes) -> None:
        """Hand ``data`` to the blob actor without waiting for it (workers wait, see fetch)."""
        self._blobs.put.remote(key, data)

    def capacity(self) -> dict[str, int] | None:
        """Task slots (CPUs / task CPUs) and ``lean`` units of the cluster's live nodes, re-read
        every ``CAPACITY_REFRESH_S`` seconds."""
        import ray

        now = time.monotonic()
        with self._lock:
            if self._cap is None or now - self._cap_at >= CAPACITY_REFRESH_S:
                total = ray.cluster_resources()
                self._cap = {"slots": int(total.get("CPU", 0) / self.task_cpus),
                             LEAN_RESOURCE: int(total.get(LEAN_RESOURCE, 0))}
                self._cap_at = now
            return self._cap

    def run(self, payload: bytes, *, lean: bool, cpus: float, memory_mb: int) -> bytes:
        import ray
        from ray import exceptions as rex

        cap = self.capacity()
        assert cap is not None
        if lean and cap[LEAN_RESOURCE] == 0:
            raise TaskRefused(
                "no node of the Ray cluster offers the `lean` resource (the pinned toolchain and built dependencies): "
                "run `fyan worker check` on a node with Lean, then `ray start --address <head>:6379 --resources "
                "'{\"lean\": N}'` there")
        options: dict[str, Any] = {"num_cpus": cpus, "memory": memory_mb * 1024 * 1024}
        if lean:
            options["resources"] = {LEAN_RESOURCE: 1}
        ref = self._fn.options(**options).remote(payload, self._runtime_ref, self._blobs, self.toolchain)
        with self._lock:
            self._refs.add(ref)
        try:
            return ray.get(ref)
        except (rex.NodeDiedError, rex.WorkerCrashedError, rex.LocalRayletDiedError, rex.ObjectLostError,
                rex.OwnerDiedError, rex.TaskCancelledError) as e:
            raise TaskLost(f"{type(e).__name__}: {str(e).splitlines()[0][:200]}") from None
        except rex.RayTaskError as e:  # the task function itself could not run there (e.g. no Fyan)
            cause = e.cause if getattr(e, "cause", None) is not None else e
            raise TaskRefused(f"the worker could not run the task: {type(cause).__name__}: "
                              f"{str(cause).splitlines()[0][:300]} (is the same Fyan installed on every node?)") from None
        except (rex.RuntimeEnvSetupError, rex.TaskUnschedulableError) as e:
            raise TaskRefused(f"{type(e).__name__}: {str(e).splitlines()[0][:300]}") from None
        except rex.RayError as e:  # any other failure of the cluster: the attempt is run again
            raise TaskLost(f"{type(e).__name__}: {str(e).splitlines()[0][:200]}") from None
        finally:
            with self._lock:
                self._refs.discard(ref)

    def close(self) -> None:
        import ray

        if not ray.is_initialized():
            return
        with self._lock:
            refs = list(self._refs)
        for ref in refs:  # tasks of an abandoned run (a stop): their results would be refused anyway
            try:
                ray.cancel(ref, force=True)
            except Exception:
                pass
        if self._blobs is not None:
            try:
                ray.kill(self._blobs)
            except Exception:
                pass
            self._blobs = None
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False
