"""The Lake runner: ``lake build`` in a workspace, with a verdict.

It runs through ``fyan.sandbox.runner.run_process`` (timeout, memory limit, sandbox; see there)
with the configuration of ``[lean]`` (``build_timeout`` seconds per call, ``memory_limit_mb``
MiB, ``sandbox``), and leave ``<name>.log`` (command, full output, exit status) and
``<name>.log.json`` (the same as JSON: command, cwd, exit code, duration, sandbox, timeout and
memory flags) in ``artifacts_dir``, the attempt folder.

``lake_build`` decides whether a build *counts*, failing closed on anything it cannot
confirm: the command must end with exit code 0 and its output must be Lake's (a success tail
``Build completed successfully[ (N jobs)].`` or a progress line for the target, and no failure
tail). A build that times out, crashes, is refused by the sandbox policy, prints nothing, or
prints only lines in no format Fyan knows is a failed build with the reason (formats:
``fyan.lean.diagnostics``). A failure caused by the Lake package itself — its configuration, its
manifest or dependencies, its toolchain (``unknown package 'Init'``, ``package configuration
has errors``, a lakefile error; leanprover/lake#22 kind) — is named in ``configuration_error``:
no candidate can fix it, so the stage flow blocks the unit as an environment problem instead of
sending the proof back. Used by the completion gate, the stage checks and SA-Pass.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from fyan.config import LeanSection
from fyan.lean.diagnostics import BuildLog, parse_lake_output
from fyan.sandbox.runner import Confinement, ProcessResult, run_process
from fyan.lean.toolchain import Toolchain


class BuildResult(BaseModel):
    """A ``lake build`` run: the process, the parsed output and the verdict (``ok``, ``reason``)."""

    targets: list[str]
    process: ProcessResult
    log: BuildLog
    ok: bool
    reason: str
    log_file: str | None = None
    configuration_error: str | None = None

    def evidence(self) -> dict:
        """What the gate report shows about this build."""
        p = self.process
        return {
            "command": " ".join(p.argv), "cwd": p.cwd, "exit_code": p.exit_code, "duration_s": p.duration_s,
            "timed_out": p.timed_out, "memory_exceeded": p.memory_exceeded, "sandboxed": p.sandboxed,
            "sandbox_note": p.note, "log": self.log_file, "jobs": len(self.log.jobs),
            "errors": sum(d.severity == "error" for d in self.log.diagnostics),
            "warnings": sum(d.severity == "warning" for d in self.log.diagnostics),
            "unrecognized_lines": len(self.log.unrecognized),
        }


#: Output of a failure of the Lake package itself (configuration, manifest, dependencies,
#: toolchain), not of a Lean file in it.
_CONFIG_ERROR = re.compile(
    r"(?i)unknown package|package configuration|configuration (?:file )?has errors|lakefile\.(?:toml|lean)|"
    r"lake-manifest|manifest (?:file|is|version)|could not resolve|failed to (?:clone|fetch|load)|"
    r"toolchain .*(?:not installed|mismatch)|lean-toolchain|unknown (?:target|facet|library)|"
    r"invalid (?:package|target|configuration)|no such file or directory.*lakefile"
)


def configuration_error(proc: ProcessResult, log: BuildLog) -> str | None:
    """The first line of a failed build's output that blames the Lake package rather than a
    Lean file (module docstring), or None."""
    if proc.ok:
        return None
    if proc.exit_code == 127 or "bwrap: execvp" in proc.output:
        where = ("inside the sandbox: the project and your home are hidden there; add its folder to "
                 "[lean] sandbox_readable" if proc.sandboxed else "exit code 127")
        return f"{proc.argv[0]} or a program it runs cannot be found ({where})"
    for d in log.diagnostics:
        lean_file = d.file is not None and d.file.endswith(".lean") and not d.file.endswith("lakefile.lean")
        if d.severity == "error" and not lean_file and _CONFIG_ERROR.search(f"{d.file or ''} {d.text}"):
            return (f"{d.file}: " if d.file else "") + d.text.splitlines()[0]
    for line in [*log.unrecognized, *proc.output.splitlines()]:
        if line.strip().startswith(("error", "uncaught")) and ".lean:" not in line.replace("lakefile.lean:", "") \
                and _CONFIG_ERROR.search(line):
            return line.strip()
    return None


def _verdict(targets: list[str], proc: ProcessResult, log: BuildLog) -> tuple[bool, str]:
    what = "lake build " + " ".join(targets)
    if proc.refused or (proc.exit_code is None and not proc.timed_out):
        return False, f"{what} did not run: {proc.describe()}"
    if proc.timed_out:
        return False, f"{what} was {proc.describe()}"
    if proc.memory_exceeded:
        return False, f"{what} {proc.describe()}"
    if proc.exit_code != 0:
        reason = f"{what} failed ({proc.describe()})"
        first = next((d for d in log.diagnostics if d.severity == "error" and d.file), None)
        if first is not None:
            text = first.text.splitlines()[0] if first.text else ""
            reason += f"; first error: {first.file}:{first.line}:{first.column}: {text}"
        elif not proc.output.strip():
            reason += "; it printed nothing"
        return False, reason
    if not proc.output.strip():
        return False, (f"{what} exited 0 but printed nothing: cannot confirm the build "
                       "(expected Lake's progress and success lines)")
    if log.succeeded is False:
        return False, f"{what} exited 0 but its output reports failures ({', '.join(log.failed_targets) or 'build failed'})"
    mentioned = any(j.target in targets for j in log.jobs)
    if log.succeeded is None and not mentioned:
        sample = next((u for u in log.unrecognized if u.strip()), "")
        return False, (f"{what} exited 0 but printed output in no format Fyan knows "
                       f"({len(log.unrecognized)} unrecognized line(s), e.g. {sample[:80]!r}): cannot confirm the build")
    tail = (f"Build completed successfully ({log.job_count} job{'s' if log.job_count != 1 else ''})"
            if log.job_count else "build succeeded")
    return True, f"{what}: {tail}"  # the duration is evidence, not part of the verdict


def lake_build(toolchain: Toolchain, workspace: Path, targets: list[str], config: LeanSection,
               artifacts_dir: Path, name: str = "build", confinement: Confinement | None = None) -> BuildResult:
    """Run ``lake build <targets>`` in ``workspace`` (sandboxed per ``[lean] sandbox``: writes
    limited to the workspace, or what ``confinement`` says) and judge it as the module docstring
    says. Never raises for a failing build."""
    log_path = artifacts_dir / f"{name}.log"
    proc = run_process(
        [str(toolchain.lake), "build", *targets], cwd=workspace, timeout_s=config.build_timeout,
        memory_mb=config.memory_limit_mb, sandbox=config.sandbox, writable=[workspace], confinement=confinement,
        pass_env=config.pass_env, log_path=log_path, lean_kind="build",
    )
    log = parse_lake_output(proc.output)
    ok, reason = _verdict(targets, proc, log)
    config_error = None if ok else configuration_error(proc, log)
    if config_error:
        reason = f"{reason}; the Lake package itself is broken: {config_error}"
    return BuildResult(targets=targets, process=proc, log=log, ok=ok, reason=reason, log_file=str(log_path),
                       configuration_error=config_error)
