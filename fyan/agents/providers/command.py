"""The command agent: a configured CLI (for example a coding agent) run in the unit workspace.

``provider = "command"`` with ``command = ["my-agent", "--flag"]`` in ``[agents.*]`` of
``fyan.toml``. For each request the CLI runs

* in the folder ``ModelRequest.workspace`` (the unit's Lake workspace for the Formalizer; a
  scratch folder for stages that have none), as its own process group;
* with the whole prompt on **stdin** (system prompt, then the conversation, separated by
  ``---`` lines), and ``FYAN_STAGE``, ``FYAN_UNIT``, ``FYAN_PROMPT``, ``FYAN_WORKSPACE`` and, for a
  structured reply, ``FYAN_REPLY_SCHEMA`` (the JSON schema) in its environment;
* with a wall-clock timeout (``timeout``, seconds): at the deadline the whole process group is
  killed and the call fails with ``ProviderError`` (retryable: the attempt fails, the next one
  may do better).

Its **stdout** is the reply text; the files it created, changed or deleted in the workspace
(``.lake/`` and ``.git/`` excluded; found by comparing sha256 before and after) are the
response's ``files`` — what the Formalizer takes as the attempt's output. A non-zero exit
fails the call with the tail of stderr. Usage is not metered (0 tokens, 0 USD): a CLI reports
its own usage in its own way. The CLI inherits the environment (it needs its own credentials);
Fyan never passes keys of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from fyan import logs
from fyan.agents import process_groups
from fyan.agents.providers.base import ModelRequest, ModelResponse, Provider, Usage
from fyan.errors import ConfigError, ProviderError

SKIP_DIRS = {".lake", ".git"}
MAX_FILE_BYTES = 4 * 1024 * 1024


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (relative POSIX path), skipping ``SKIP_DIRS``."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def changed_files(root: Path, before: dict[str, str]) -> dict[str, str | None]:
    """Files under ``root`` that differ from ``before`` (new text, or None when deleted)."""
    after = snapshot(root)
    changes: dict[str, str | None] = {}
    for rel, digest in after.items():
        if before.get(rel) != digest:
            path = root / rel
            if path.stat().st_size > MAX_FILE_BYTES:
                raise ProviderError(f"command agent wrote {rel} of {path.stat().st_size} bytes (limit {MAX_FILE_BYTES})")
            changes[rel] = path.read_text(encoding="utf-8", errors="replace")
    for rel in before:
        if rel not in after:
            changes[rel] = None
    return changes


class CommandAgentProvider(Provider):
    name = "command"
    edits_files = True

    def __init__(self, argv: list[str], timeout_s: float = 1800.0) -> None:
        if not argv:
            raise ConfigError('provider = "command" needs command = ["program", "arg", ...] in fyan.toml')
        self.argv = list(argv)
        self.timeout_s = timeout_s

    def executable(self) -> str | None:
        """Path of the configured program, or None when it is not found (``fyan doctor``)."""
        return shutil.which(self.argv[0])

    def complete(self, request: ModelRequest) -> ModelResponse:
        if self.executable() is None:
            raise ProviderError(f"command agent {self.argv[0]!r} not found on PATH",
                                hint="install it or fix [agents.*] command in fyan.toml (`fyan doctor`)", retryable=False)
        scratch = None
        if request.workspace is None:
            scratch = tempfile.mkdtemp(prefix=process_groups.SCRATCH_PREFIX, dir=process_groups.scratch_dir())
        cwd = Path(request.workspace or scratch)
        try:
            return self._run(request, cwd)
        finally:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)

    def _run(self, request: ModelRequest, cwd: Path) -> ModelResponse:
        before = snapshot(cwd)
        env = {**os.environ, "FYAN_STAGE": request.stage, "FYAN_UNIT": request.unit or "",
               "FYAN_PROMPT": request.prompt, "FYAN_WORKSPACE": str(cwd)}
        if request.json_schema is not None:
            env["FYAN_REPLY_SCHEMA"] = json.dumps(request.json_schema)
        start = time.monotonic()
        try:
            proc = subprocess.Popen(self.argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except OSError as e:
            raise ProviderError(f"command agent {self.argv[0]!r} could not start: {e.strerror or e}", retryable=False) from None
        group = process_groups.register(proc.pid, f"command agent {self.argv[0]} ({request.stage}, {request.unit})")
        try:
            out, err = proc.communicate(request.transcript.encode("utf-8"), timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.communicate()
            logs.get().warning("command_agent_timeout", program=self.argv[0], timeout_s=self.timeout_s,
                               stage=request.stage, unit=request.unit)
            raise ProviderError(f"command agent {self.argv[0]!r} killed at the timeout of {self.timeout_s:g} s",
                                hint="raise [agents.*] timeout in fyan.toml, or check the agent") from None
        finally:  # whatever the agent left running in its group ends with the call
            process_groups.unregister(group)
        latency = time.monotonic() - start
        if proc.returncode != 0:
            tail = err.decode("utf-8", errors="replace").strip().splitlines()[-5:]
            raise ProviderError(f"command agent {self.argv[0]!r} exited with status {proc.returncode}"
                                + (": " + " | ".join(tail) if tail else ""))
        files = changed_files(cwd, before)
        return ModelResponse(text=out.decode("utf-8", errors="replace"), usage=Usage(), provider=self.name,
                             model=request.model, latency_s=latency, key=request.key(), files=files)
