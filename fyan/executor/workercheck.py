"""``fyan doctor --worker``: can this node take a project's Lean tasks on a Ray cluster?

A node should advertise the custom Ray resource ``lean`` (``ray start --address … --resources
'{"lean": N}'``) only when every check here passes for the project's toolchain pin:

* ``lake`` is found as a task on this node would find it (``FYAN_LEAN__LAKE``, the project's
  ``[lean] lake``, ``PATH``, ``~/.elan/bin``) and, run in a folder pinned to the project's
  toolchain, reports that version (``fyan.lean.toolchain.check_pin``);
* the built Lake dependencies for the pin (Mathlib, when the project's Lake package requires
  packages or ``[lean] extra_imports`` is set) are in ``$FYAN_WORKER_DIR/lean/<pin>/.lake/packages``
  (make that folder a copy of the project's ``lean/`` package and run ``lake exe cache get``
  and ``lake build`` there once);
* the build sandbox works when ``[lean] sandbox = "require"``;
* ``FYAN_WORKER_DIR`` (default ``~/.cache/fyan/worker``) can be written;
* Ray is importable (``pip install 'fyan[ray]'``).

It also suggests ``N``: the tasks this node can hold at once, the smaller of its CPUs and its
memory divided by ``[lean] memory_limit_mb``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from fyan.config import LeanSection


def _memory_mib() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError, AttributeError):
        return None


def _needs_packages(lean_dir: Path | None, cfg: LeanSection) -> bool:
    if cfg.extra_imports:
        return True
    manifest = lean_dir / "lake-manifest.json" if lean_dir is not None else None
    if manifest is not None and manifest.is_file():
        try:
            return bool(json.loads(manifest.read_text(encoding="utf-8")).get("packages"))
        except (ValueError, OSError):
            return True
    return False


def check_worker(cfg: LeanSection, lean_dir: Path | None = None) -> dict[str, Any]:
    """The report: ``checks`` (name, ok, detail), ``ok`` (the node may advertise ``lean``),
    ``lean_slots`` (suggested N) and ``command`` (the ``ray start`` line)."""
    from fyan.executor.ray_backend import packages_dir, worker_dir
    from fyan.sandbox.runner import bwrap_status
    from fyan.lean.toolchain import check_pin, discover

    checks: list[dict[str, Any]] = []

    def put(name: str, ok: bool | None, detail: str) -> None:
        checks.append({"name": name, "ok": ok, "detail": detail})

    with tempfile.TemporaryDirectory(prefix="fyan-worker-check-") as tmp:
        (Path(tmp) / "lean-toolchain").write_text(cfg.toolchain.strip() + "\n", encoding="utf-8")
        disc = discover(cfg, cwd=Path(tmp))
        if disc.toolchain is None:
            put("toolchain", False, disc.problem or "Lean toolchain not found")
        else:
            pin = check_pin(disc.toolchain, Path(tmp))
            put("toolchain", pin.ok, f"{disc.toolchain.lake}: {pin.reason}")
    packages = packages_dir(cfg.toolchain)
    needed = _needs_packages(lean_dir, cfg)
    present = packages.is_dir() and any(packages.iterdir())
    if present:
        put("dependencies", True, f"built Lake packages for {cfg.toolchain} in {packages}")
    elif needed:
        put("dependencies", False, f"the project needs Lake packages (Mathlib?) and {packages} is missing: copy the "
                                   "project's lean/ folder to " + str(packages.parent.parent) +
                                   ", then run `lake exe cache get && lake build` there")
    else:
        put("dependencies", None, f"none needed by this project (would be in {packages})")
    bwrap, why = bwrap_status()
    if cfg.sandbox == "require":
        put("sandbox", bwrap is not None, f"[lean] sandbox = \"require\": {why}")
    else:
        put("sandbox", None if bwrap is None else True, f"[lean] sandbox = \"{cfg.sandbox}\": {why}")
    base = worker_dir()
    try:
        base.mkdir(parents=True, exist_ok=True)
        probe = base / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
        put("worker folder", True, f"{base} is writable")
    except OSError as e:
        put("worker folder", False, f"{base} cannot be written ({e}); set FYAN_WORKER_DIR")
    ray = importlib.util.find_spec("ray") is not None
    put("ray", ray, "Ray is installed" if ray else "Ray is not installed: pip install 'fyan[ray]'")
    ok = all(c["ok"] is not False for c in checks)
    cpus = os.cpu_count() or 1
    mem = _memory_mib()
    slots = max(1, min(cpus, mem // cfg.memory_limit_mb)) if mem else cpus
    command = f"ray start --address <head>:6379 --resources '{{\"lean\": {slots}}}'"
    return {"checks": checks, "ok": ok, "toolchain": cfg.toolchain, "lean_slots": slots,
            "command": command if ok else "ray start --address <head>:6379   # without `lean`: agent-only tasks"}


def render_worker(report: dict[str, Any]) -> str:
    mark = {True: "ok  ", False: "FAIL", None: "--  "}
    lines = [f"Worker check for Lean tasks pinned to {report['toolchain']}:"]
    lines += [f"[{mark[c['ok']]}] {c['name']}: {c['detail']}" for c in report["checks"]]
    if report["ok"]:
        lines.append(f"This node can take Lean tasks. Join the cluster with:\n  {report['command']}")
    else:
        lines.append("This node cannot take Lean tasks (see FAIL above); it can still take agent-only tasks:\n  "
                     + report["command"])
    return "\n".join(lines)
