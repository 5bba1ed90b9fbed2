"""The command agent: a configured CLI (for example a coding agent) run in the unit workspace.

``provider = "command"`` with ``command = ["my-agent", "--flag"]`` in ``[agents.*]`` of
``fyan.toml``. For each request the CLI runs

* **confined** (an untrusted process, docs/design.md): in bubblewrap per ``[lean] sandbox``
  (default ``require``: refused, with the remedy, when bubblewrap is missing or cannot create
  its namespaces; ``off`` runs it unconfined, an explicit choice every report states). Inside,
  the workspace is writable; the project folder (the state store, ``.fyan/``, other units, the
  sources) and the user's home are hidden, so neither writable nor readable; the project's
  Lake package, the Lean toolchain, the program's own folder and ``sandbox_readable`` are
  readable; ``sandbox_writable`` is writable too; the network is there only with
  ``network = true``. Fyan's own code is read-only like the rest of the file system. As root
  too: the CLI runs in its own user namespace with every capability dropped, ``/tmp``,
  ``/run``, ``/var/tmp``, ``/dev/shm`` and the home are private empty tmpfs (docs/sandbox.md);
* in the folder ``ModelRequest.workspace`` (the unit's Lake workspace for the Formalizer; a
  scratch folder for stages that have none), as **its own process group**, started in one
  place (``ProcessGroup.start``) and ended in one place (``ProcessGroup.end``) whatever
  happens — a normal exit, an error, the timeout —, so nothing it started outlives the attempt
  (inside the sandbox its PID namespace ends with it; unconfined, ``fyan/sandbox/reaper.py`` ends
  the whole tree, a ``setsid`` child included);
* with the whole prompt on **stdin** (system prompt, then the conversation, separated by
  ``---`` lines), and ``FYAN_STAGE``, ``FYAN_UNIT``, ``FYAN_PROMPT``, ``FYAN_WORKSPACE`` (the
  workspace's real path, the one that exists inside the sandbox) and, for a structured reply,
  ``FYAN_REPLY_SCHEMA`` (the JSON schema) in its environment;
* with **nothing else of Fyan's environment** but ``PATH``, ``HOME``, ``LANG``, ``TMPDIR``, the
  ``FYAN_*`` variables (``fyan.sandbox.runner.confined_environment``) and the variables its
  ``pass_env`` names (its credentials: ``pass_env = ["ANTHROPIC_API_KEY"]``); only fds 0-2;
* with a wall-clock timeout (``timeout``, seconds): at the deadline the whole process group is
  killed and the call fails with ``ProviderError`` (retryable: the attempt fails, the next one
  may do better).

Its **stdout** is the reply text; the files it created, changed or deleted in the workspace
(``.lake/``, ``.git/`` and the sandbox's temporary folder excluded; found by comparing sha256
before and after) are the response's ``files`` — what the Formalizer takes as the attempt's
output. A non-zero exit fails the call with the tail of stderr. Usage is not metered (0 tokens,
0 USD): a CLI reports its own usage in its own way. Fyan passes a key only when ``pass_env``
names it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from fyan import logs
from fyan.agents import process_groups
from fyan.agents.providers.base import ModelRequest, ModelResponse, Provider, Usage
from fyan.errors import ConfigError, ProviderError
from fyan.sandbox import safefile
from fyan.sandbox.runner import (Confinement, ProcessGroup, confine, confined_environment, home_dir, sandbox_tmpdir,
                              strip_set_id_bits, toolchain_paths)
from fyan.prover.agent_mcp import CONFIG_DIR, read_only_paths

#: folders of a workspace whose files are never response files: Lake's outputs, git, the sandbox's
#: temporary folder and the prover server's configuration, scratch and log (``fyan.prover.agent_mcp``)
SKIP_DIRS = {".lake", ".git", ".sandbox-tmp", ".fyan-prover"}
MAX_FILE_BYTES = 4 * 1024 * 1024


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every regular file under ``root`` (relative POSIX path), skipping ``SKIP_DIRS``.
    Links, FIFOs, devices and sockets are skipped without being opened; a regular file larger
    than ``MAX_FILE_BYTES`` is not read (its entry is ``oversize:<bytes>``: ``changed_files``
    refuses it): the agent controls what it leaves, so nothing is trusted by name
    (``fyan.sandbox.safefile``)."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        for name in filenames:
            path = Path(dirpath) / name
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            rel = path.relative_to(root).as_posix()
            if st.st_size > MAX_FILE_BYTES:
                found[rel] = f"oversize:{st.st_size}"
                continue
            try:
                found[rel] = hashlib.sha256(safefile.read_bytes(path, limit=MAX_FILE_BYTES)).hexdigest()
            except OSError as e:  # swapped for something else, or grew, while walked
                found[rel] = f"unreadable:{e}"
    return found


def changed_files(root: Path, before: dict[str, str]) -> dict[str, str | None]:
    """Files under ``root`` that differ from ``before`` (new text, or None when deleted). Raises
    ``ProviderError`` for a changed file that is too large or is no longer a regular file."""
    after = snapshot(root)
    changes: dict[str, str | None] = {}
    for rel, digest in after.items():
        if before.get(rel) != digest:
            path = root / rel
            try:
                data = safefile.read_bytes(path, limit=MAX_FILE_BYTES)
            except OSError as e:
                raise ProviderError(f"command agent wrote {rel}, which cannot be taken (limit {MAX_FILE_BYTES} "
                                    f"bytes, regular files only): {e}") from None
            changes[rel] = data.decode("utf-8", errors="replace")
    for rel in before:
        if rel not in after:
            changes[rel] = None
    return changes


class CommandAgentProvider(Provider):
    """A CLI run confined in the workspace (module docstring).

    ``sandbox``: ``require`` | ``auto`` | ``off`` (``[lean] sandbox``); ``project_root``: the
    folder to hide (None: only the home is hidden); ``network``: allow the network inside;
    ``readable`` / ``writable``: extra paths (``~`` expanded); ``lake``: the toolchain to keep
    readable; ``pass_env``: variables of Fyan's environment it gets besides the minimal ones."""

    name = "command"
    edits_files = True

    def __init__(self, argv: list[str], timeout_s: float = 1800.0, *, sandbox: str = "require",
                 project_root: Path | None = None, network: bool = False, readable: Sequence[str] = (),
                 writable: Sequence[str] = (), lake: Path | None = None, pass_env: Sequence[str] = ()) -> None:
        if not argv:
            raise ConfigError('provider = "command" needs command = ["program", "arg", ...] in fyan.toml')
        self.argv = list(argv)
        self.timeout_s = timeout_s
        self.sandbox = sandbox
        self.project_root = project_root
        self.network = network
        self.readable = [Path(p).expanduser() for p in readable]
        self.writable = [Path(p).expanduser() for p in writable]
        self.lake = lake
        self.pass_env = list(pass_env)
        if project_root is not None:
            root = project_root.resolve()
            overlap = [p for p in self.writable if p.resolve() == root or root in p.resolve().parents
                       or p.resolve() in root.parents]
            if overlap:
                raise ConfigError(f"sandbox_writable {overlap[0]} overlaps the project folder {root} (inside it, or "
                                  "containing it): a command agent writes only in its workspace")

    def executable(self) -> str | None:
        """Path of the configured program, or None when it is not found (``fyan doctor``)."""
        return shutil.which(self.argv[0])

    def confinement(self, cwd: Path) -> Confinement:
        """What the CLI may see and touch when run in ``cwd`` (module docstring)."""
        hidden = [p for p in (self.project_root, home_dir()) if p is not None]
        # the program's own installation is bound by the sandbox (``runner.program_paths``), never a
        # folder it hides: ``~/agent.sh`` must not bring the whole home back
        readable: list[Path] = []
        if self.project_root is not None:
            readable.append(self.project_root / "lean")
        readable += toolchain_paths(self.lake, hidden=hidden) + self.readable
        # what the prover tools' MCP server (started by the agent, inside this sandbox) reads
        readable += read_only_paths(self.project_root, hidden)
        return Confinement(writable=(cwd, *self.writable), read_only=tuple(readable), hidden=tuple(hidden),
                           network=self.network)

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
        env = confined_environment(pass_env=self.pass_env, extra={
            "FYAN_STAGE": request.stage, "FYAN_UNIT": request.unit or "", "FYAN_PROMPT": request.prompt,
            "FYAN_WORKSPACE": str(cwd.resolve())})
        mcp_config = cwd / CONFIG_DIR / "mcp.json"
        if mcp_config.is_file() and not mcp_config.is_symlink():  # written by Fyan for the prove stage
            env["FYAN_MCP_CONFIG"] = str(mcp_config.resolve())
        if request.json_schema is not None:
            env["FYAN_REPLY_SCHEMA"] = json.dumps(request.json_schema)
        confinement = self.confinement(cwd)
        wrapped = confine([self.executable() or self.argv[0], *self.argv[1:]], cwd, self.sandbox, confinement, env)
        if wrapped.refused:
            raise ProviderError(f"command agent {self.argv[0]!r} not run: {wrapped.note}", retryable=False)
        if wrapped.sandboxed:
            env["TMPDIR"] = str(sandbox_tmpdir(confinement.writable))
        group = ProcessGroup(wrapped.argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        start = time.monotonic()
        try:
            proc = group.start()  # the one place the group starts; `collect` ends it
        except OSError as e:
            raise ProviderError(f"command agent {self.argv[0]!r} could not start: {e.strerror or e}", retryable=False) from None
        handle = process_groups.register(proc.pid, f"command agent {self.argv[0]} ({request.stage}, {request.unit})")
        try:
            out, err, timed_out = group.collect(request.transcript.encode("utf-8"), self.timeout_s)  # ends the group
        finally:  # whatever the agent left running in its group ends with the call
            process_groups.unregister(handle)
        if timed_out:
            logs.get().warning("command_agent_timeout", program=self.argv[0], timeout_s=self.timeout_s,
                               stage=request.stage, unit=request.unit)
            raise ProviderError(f"command agent {self.argv[0]!r} killed at the timeout of {self.timeout_s:g} s",
                                hint="raise [agents.*] timeout in fyan.toml, or check the agent")
        latency = time.monotonic() - start
        if proc.returncode != 0:
            tail = err.decode("utf-8", errors="replace").strip().splitlines()[-5:]
            raise ProviderError(f"command agent {self.argv[0]!r} exited with status {proc.returncode}"
                                + (": " + " | ".join(tail) if tail else ""))
        if wrapped.sandboxed:
            strip_set_id_bits(confinement.writable)
        files = changed_files(cwd, before)
        return ModelResponse(text=out.decode("utf-8", errors="replace"), usage=Usage(), provider=self.name,
                             model=request.model, latency_s=latency, key=request.key(), files=files)
