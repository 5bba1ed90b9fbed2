"""Where stage attempts and gate builds run.

The run loop (``fyan.orchestrator.engine``) decides *what* runs next; the executor decides
*where*: in threads of the head (``[executor] backend = "local"``) or as Ray tasks on the nodes
of a cluster (``"ray"``), placed by resources. Either way a task crosses the same boundary —
an encoded ``TaskSpec`` out, an encoded ``TaskResult`` back (``payload``) — and the head alone
checks and publishes what comes back, through the gateway.

Modules: ``payload`` (the boundary), ``inputs`` (the head builds a task's inputs), ``mirror``
(a node's copy of the project), ``worker`` (a task runs), ``core`` (the executor, the local
backend, taking results in), ``ray_backend`` (the Ray backend), ``workercheck`` (can this node
take Lean tasks?).
"""

from fyan.executor.core import LEAN_RESOURCE, AttemptLost, Executor, make_runtime
from fyan.executor.worker import Runtime

__all__ = ["AttemptLost", "Executor", "LEAN_RESOURCE", "Runtime", "make_runtime"]
