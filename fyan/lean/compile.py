"""Compile one Lean module with plain ``lean``: how every unit is built.

The completion gate, the stage checks and the Formalizer's feedback builds compile a unit's
module with the toolchain's own ``lean`` — not ``lake build`` in a narrowed Lake workspace — so
no Lake manifest, trace or workspace configuration takes part in a decision, and Lean's own JSON
messages are the build's output (``docs/lean-contract.md``, section "Compiling a module"):

    lean -R <source root> -o <out>/<A>/<B>.olean -i <out>/<A>/<B>.ilean --json -D k=v … <root>/<A>/<B>.lean

run in ``<source root>`` with ``LEAN_PATH`` = the folders given for this compile (recorded
``.olean`` files of upstream units, outputs of an earlier trusted phase), then the dependency
folders of the project's Lake package (Mathlib and other ``require`` s, as ``lake env printenv
LEAN_PATH`` prints them). Lean puts its own ``lib/lean`` (``Init``, ``Std``, ``Lean``) after
``LEAN_PATH`` (``initSearchPath``), and the first folder holding a module wins; the output folder
is never on the search path of the compile that writes it.

* The module's name is computed from its path below ``-R`` (``moduleNameOfFileName``): the
  private names ``_private.<Module>.0.…`` the inspector reads depend on it.
* ``lean`` does not create the output's folder (it fails with ``failed to write``), so it is made
  here; an ``.olean`` is written only when elaboration reported no error (checked on Lean 4.35.0:
  tests/test_compile.py).
* ``-D`` options are the package's ``leanOptions`` (``lakefile.toml``), as Lake passes them; an
  unknown option is an error (``invalid -D parameter``).

``LeanSetup`` is the resolved toolchain for one Lake package (``resolve``): the real ``lean``
binary under the pinned toolchain's prefix (never elan's proxy, which picks a toolchain from the
folder it runs in), its version and git hash (an ``.olean`` records both in its header and Lean
refuses one from another build: ``incompatible header``), the dependency folders and the
options. ``resolve`` runs ``lean --print-prefix`` and ``lake env printenv LEAN_PATH`` in the
package (the trusted step: the user's own package, no candidate involved) and keeps the answer
per process, keyed by the files it depends on.

``compile_module`` runs one compile through ``fyan.sandbox.runner.run_process`` (timeout, memory
limit, memory admission as a ``build``, sandbox) and judges it, failing closed: exit code 0, no
message of severity ``error``, no output line that is not a Lean JSON message, and the ``.olean``
written as a regular file. A failure no candidate can cause or fix — a dependency or upstream
``.olean`` missing, unreadable or from another Lean build, an unknown ``-D`` option, an output
that cannot be written, ``lean`` crashing or missing, the sandbox refusing — is named in
``environment_error``, so the stage flow blocks on the environment instead of charging the
proof.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import threading
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from fyan.config import LeanSection
from fyan.lean.diagnostics import Diagnostic, parse_lean_json
from fyan.sandbox.runner import Confinement, ProcessResult, run_process, tool_environment
from fyan.lean.toolchain import Toolchain

#: Lean messages (and stderr lines) that blame the environment, not the compiled file
#: (docs/lean-contract.md: each text read from Lean 4.35.0's output; older wordings beside them)
_ENVIRONMENT = re.compile(
    r"object file .* of module \S+ does not exist|unknown module prefix|unknown package|"
    r"failed to read file .*(?:incompatible header|invalid header|\.olean)|incompatible header|"
    r"invalid -D parameter|failed to write '|failed to (?:open|load) .*\.olean"
)


class LeanSetupError(Exception):
    """The toolchain or the Lake package cannot give a ``LeanSetup``; the message says why and
    what to do."""


@dataclass(frozen=True)
class LeanSetup:
    """The toolchain as a compile uses it (module docstring). Paths are absolute."""

    lean: Path
    sysroot: Path
    version: str
    githash: str
    #: folders of the package's dependencies' compiled modules (Mathlib, …), searched after the
    #: folders a compile names and before Lean's own ``lib/lean``
    dependency_path: tuple[Path, ...] = ()
    #: ``-D`` options (name, value) from the package's ``leanOptions``
    options: tuple[tuple[str, str], ...] = ()
    #: the ``lake --version`` line of the toolchain this came from
    toolchain: str = ""
    #: what resolving printed, for reports (the commands and their answers)
    notes: tuple[str, ...] = field(default=())

    def search_path(self, first: list[Path] | tuple[Path, ...] = ()) -> list[Path]:
        """``first`` (this compile's folders, in order), then the dependency folders."""
        return [*(Path(p) for p in first), *self.dependency_path]

    def environment(self, first: list[Path] | tuple[Path, ...] = ()) -> dict[str, str]:
        """The variables a Lean process needs for ``search_path(first)``: ``LEAN_PATH`` and
        ``LEAN_SYSROOT`` (read by programs that call ``findSysroot``, such as the inspector)."""
        return {"LEAN_PATH": os.pathsep.join(str(p) for p in self.search_path(first)),
                "LEAN_SYSROOT": str(self.sysroot)}

    def readable(self) -> list[Path]:
        """What a confined compile must be able to read besides its own folders: the toolchain's
        prefix and the dependency folders."""
        return [self.sysroot, *self.dependency_path]

    def evidence(self) -> dict:
        return {"lean": str(self.lean), "lean_version": self.version, "lean_githash": self.githash,
                "dependency_path": [str(p) for p in self.dependency_path],
                "options": {k: v for k, v in self.options}}


def package_options(package: Path) -> tuple[tuple[str, str], ...]:
    """The ``leanOptions`` of ``package/lakefile.toml`` (the package's table, then each
    ``[[lean_lib]]``'s), as ``-D`` pairs in the order Lake reads them; () without a TOML lakefile.
    Raises ``LeanSetupError`` for a lakefile that is not TOML."""
    path = package / "lakefile.toml"
    if not path.is_file():
        return ()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise LeanSetupError(f"{path} is not valid TOML: {e}") from None
    merged: dict[str, str] = {}
    tables = [data.get("leanOptions") or {}] + [lib.get("leanOptions") or {} for lib in data.get("lean_lib", [])
                                                if isinstance(lib, dict)]
    for table in tables:
        if not isinstance(table, dict):
            continue
        for key, value in table.items():
            merged[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return tuple(merged.items())


_CACHE: dict[tuple, LeanSetup] = {}
_CACHE_LOCK = threading.Lock()


def _file_key(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "-"


def _first_line(proc: ProcessResult) -> str:
    lines = [line.strip() for line in proc.output.splitlines() if line.strip()]
    return lines[-1] if lines else proc.describe()


def resolve(toolchain: Toolchain, package: Path, config: LeanSection, *, log_dir: Path | None = None) -> LeanSetup:
    """The ``LeanSetup`` of ``toolchain`` for the Lake package in ``package`` (module
    docstring). Kept per process while ``lake --version``, the package's ``lakefile.toml``,
    ``lake-manifest.json`` and ``lean-toolchain`` are unchanged. Raises ``LeanSetupError``."""
    package = package.resolve()
    key = (str(toolchain.lake), toolchain.version, str(package),
           *(_file_key(package / n) for n in ("lakefile.toml", "lakefile.lean", "lake-manifest.json", "lean-toolchain")))
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
    if toolchain.lean is None:
        raise LeanSetupError(f"the toolchain of {toolchain.lake} has no `lean` beside `lake`; reinstall it with elan")
    timeout = min(config.build_timeout, 300.0)
    log = (lambda n: log_dir / f"{n}.log") if log_dir is not None else (lambda n: None)
    env = tool_environment(pass_env=("ELAN_HOME", "ELAN_TOOLCHAIN", *config.pass_env))
    prefix = run_process([str(toolchain.lean), "--print-prefix"], cwd=package, timeout_s=timeout, sandbox="off",
                         env=env, log_path=log("lean-prefix"))
    if not prefix.ok or not prefix.output.strip():
        raise LeanSetupError(f"`lean --print-prefix` failed in {package}: {_first_line(prefix)}")
    sysroot = Path(prefix.output.strip().splitlines()[-1].strip())
    lean = sysroot / "bin" / "lean"
    if not (lean.is_file() and os.access(lean, os.X_OK)):
        raise LeanSetupError(f"`lean --print-prefix` names {sysroot}, which has no bin/lean")
    version = run_process([str(lean), "--version"], cwd=package, timeout_s=timeout, sandbox="off", env=env)
    m = re.search(r"version (\d+\.\d+\.\d+(?:-[0-9A-Za-z.\-]+)?)", version.output)
    if not version.ok or m is None:
        raise LeanSetupError(f"`{lean} --version` did not say its version: {_first_line(version)}")
    githash = run_process([str(lean), "--githash"], cwd=package, timeout_s=timeout, sandbox="off", env=env)
    gh = githash.output.strip().splitlines()[-1].strip() if githash.ok and githash.output.strip() else ""
    if not re.fullmatch(r"[0-9a-f]{7,64}", gh):
        raise LeanSetupError(f"`{lean} --githash` did not print a commit hash: {_first_line(githash)}")
    deps, printed = _dependency_path(toolchain, package, sysroot, env, timeout, log)
    core = sysroot / "lib" / "lean"  # the toolchain's own library (Init, Std, Lean, Lake)
    missing = [m for m in config.extra_imports
               if not any(module_path(d, m, ".olean").is_file() for d in [*deps, core])]
    built = None
    if missing:  # the trusted step: Lake builds the dependencies the units import, once
        built = run_process([str(toolchain.lake), "--keep-toolchain", "build", *(f"+{m}" for m in missing)],
                            cwd=package, timeout_s=config.build_timeout, memory_mb=config.memory_limit_mb,
                            sandbox="off", env=env, log_path=log("lake-build-dependencies"), lean_kind="build")
        if not built.ok:
            raise LeanSetupError(
                f"the dependencies the units import ({', '.join(missing)}) are not built and `lake build` of them "
                f"failed in {package}: {_first_line(built)}; build them there (for Mathlib: `lake exe cache get`, "
                "then `lake build`)")
        deps, printed = _dependency_path(toolchain, package, sysroot, env, timeout, log)
        still = [m for m in missing if not any(module_path(d, m, ".olean").is_file() for d in [*deps, core])]
        if still:
            raise LeanSetupError(f"after `lake build` in {package}, no dependency folder holds {', '.join(still)} "
                                 f"(LEAN_PATH: {printed}); check [lean] extra_imports and the package's requires")
    notes = [f"lean --print-prefix: {sysroot}", f"lake env printenv LEAN_PATH: {printed}"]
    if built is not None:
        notes.append(f"lake build {' '.join(missing)}: {built.describe()}")
    setup = LeanSetup(lean=lean, sysroot=sysroot, version=m.group(1), githash=gh, dependency_path=tuple(deps),
                      options=package_options(package), toolchain=toolchain.version, notes=tuple(notes))
    with _CACHE_LOCK:
        _CACHE[key] = setup
    return setup


def _dependency_path(toolchain: Toolchain, package: Path, sysroot: Path, env: dict[str, str], timeout: float,
                     log) -> tuple[list[Path], str]:
    """(``dependency_folders`` of what ``lake env printenv LEAN_PATH`` prints in ``package``, that
    text). Raises ``LeanSetupError``."""
    printed = run_process([str(toolchain.lake), "--keep-toolchain", "env", "printenv", "LEAN_PATH"], cwd=package,
                          timeout_s=timeout, sandbox="off", env=env, log_path=log("lake-env-lean-path"))
    if not printed.ok:
        raise LeanSetupError(f"`lake env printenv LEAN_PATH` failed in {package}: {_first_line(printed)}; "
                             "the project's Lake package is broken (check lean/lakefile.toml, run `lake update` there)")
    text = printed.output.strip().splitlines()[-1] if printed.output.strip() else ""
    return dependency_folders(text, package, sysroot), text


def dependency_folders(lean_path: str, package: Path, sysroot: Path) -> list[Path]:
    """The folders of ``lean_path`` (as ``lake env`` prints it) a unit's compile may search:
    every existing folder but the package's own build output (complete units; the gate reads
    their recorded copies instead) and Lean's own library (searched last by Lean anyway)."""
    package = package.resolve()
    own = [package / ".lake" / "build", package / "build"]
    packages = package / ".lake" / "packages"
    out: list[Path] = []
    for entry in lean_path.split(os.pathsep):
        if not entry.strip():
            continue
        path = Path(entry.strip())
        path = (package / path) if not path.is_absolute() else path
        try:
            path = path.resolve()
        except OSError:
            continue
        inside_own = any(path == o or o in path.parents for o in own)
        if inside_own and not (path == packages or packages in path.parents):
            continue
        if path == (sysroot / "lib" / "lean").resolve() or not path.is_dir() or path in out:
            continue
        out.append(path)
    return out


class CompileResult(BaseModel):
    """One compile of one module (module docstring): the process, Lean's messages, the verdict
    (``ok``, ``reason``), and ``environment_error`` when the failure is not the file's doing."""

    module: str
    file: str
    process: ProcessResult
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    unrecognized: list[str] = Field(default_factory=list)
    ok: bool
    reason: str
    olean: str | None = None
    environment_error: str | None = None
    log_file: str | None = None
    search_path: list[str] = Field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def sorry_warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_sorry]

    def evidence(self) -> dict:
        """What a gate report shows about this compile."""
        p = self.process
        return {"command": " ".join(p.argv), "cwd": p.cwd, "exit_code": p.exit_code, "duration_s": p.duration_s,
                "timed_out": p.timed_out, "memory_exceeded": p.memory_exceeded, "sandboxed": p.sandboxed,
                "sandbox_note": p.note, "log": self.log_file, "search_path": self.search_path,
                "errors": len(self.errors), "warnings": sum(d.severity == "warning" for d in self.diagnostics),
                "unrecognized_lines": len(self.unrecognized)}


def module_path(root: Path, module: str, suffix: str) -> Path:
    """``root/A/B/C<suffix>`` for module ``A.B.C``."""
    return root.joinpath(*module.split(".")).with_suffix(suffix)


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _covered(path: Path, folders: list[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def compile_confinement(setup: LeanSetup, *, source_root: Path, out_root: Path,
                        search_path: list[Path] | tuple[Path, ...],
                        confinement: Confinement | None = None,
                        readable: list[str] | tuple[str, ...] = ()) -> Confinement:
    """What the sandbox lets one compile see: ``confinement`` (default: write only ``out_root``,
    read the toolchain's prefix, the dependency folders (``LeanSetup.readable``) and ``readable``,
    the folders ``[lean] sandbox_readable`` names, ``~`` allowed), plus, read only, the source root and every folder of the search path that the confinement does not
    already show. Lean enters its source root (the compile runs there) and reads the ``.olean``
    files of its search path; the sandbox hides ``/tmp``, ``$HOME`` and the project folder, so a
    compile whose folders lie there would fail (``bwrap: Can't chdir to …``) unless they are bound
    back. A folder already under a writable or read-only one keeps that rule (binding a writable
    workspace's source root read-only would make its output folder read-only too)."""
    if confinement is None:
        confinement = Confinement(writable=(out_root,), read_only=(*setup.readable(),
                                                                   *(Path(p).expanduser() for p in readable)))
    shown = [Path(p).resolve() for p in (*confinement.writable, *confinement.read_only)]
    extra: list[Path] = []
    for folder in (source_root, *search_path):
        real = Path(folder).resolve()
        if real.exists() and not _covered(real, shown) and real not in extra:
            extra.append(real)
    if not extra:
        return confinement
    return replace(confinement, read_only=(*confinement.read_only, *extra))


def compile_module(setup: LeanSetup, *, source_root: Path, module: str, out_root: Path,
                   search_path: list[Path] | tuple[Path, ...], config: LeanSection, log_dir: Path, name: str,
                   confinement: Confinement | None = None, env: dict[str, str] | None = None) -> CompileResult:
    """Compile ``module`` (its source ``source_root/<A>/<B>.lean``) into ``out_root`` with plain
    ``lean`` (module docstring), searching ``search_path`` then ``setup.dependency_path``; the log
    is ``log_dir/<name>.log`` (with ``.log.json``). ``confinement``: what the sandbox lets the
    compile see and write (default: write only ``out_root``; the source root and the search path
    are always readable, ``compile_confinement``). ``env``: the process's base
    environment (default: ``fyan.sandbox.runner.tool_environment`` of this process); ``LEAN_PATH`` and
    ``LEAN_SYSROOT`` are set here. Never raises for a failing compile.

    The folders are used by their real paths (links resolved): the sandbox binds a folder at its
    real path, so a path through a link inside a hidden folder (an executor's project copy links
    its ``workspaces/`` to the project's) would name nothing inside it."""
    source_root, out_root = source_root.resolve(), out_root.resolve()
    search_path = [p.resolve() for p in search_path]
    file = module_path(source_root, module, ".lean")
    olean = module_path(out_root, module, ".olean")
    ilean = module_path(out_root, module, ".ilean")
    log_path = log_dir / f"{name}.log"
    searched = [str(p) for p in setup.search_path(search_path)]
    argv = [str(setup.lean), "-R", str(source_root), "-o", str(olean), "-i", str(ilean), "--json"]
    for key, value in setup.options:
        argv += ["-D", f"{key}={value}"]
    argv.append(str(file))

    def done(proc: ProcessResult, ok: bool, reason: str, environment: str | None = None, **more) -> CompileResult:
        return CompileResult(module=module, file=str(file), process=proc, ok=ok, reason=reason,
                             environment_error=environment, log_file=str(log_path), search_path=searched, **more)

    if not _regular(file):
        proc = ProcessResult(argv=argv, cwd=str(source_root), exit_code=None, duration_s=0.0,
                             note=f"{file} is not a regular file")
        return done(proc, False, f"lean {module} did not run: its source {file} is missing or not a regular file")
    try:
        olean.parent.mkdir(parents=True, exist_ok=True)
        for stale in (olean, ilean):
            if os.path.lexists(stale):
                os.unlink(stale)
    except OSError as e:
        proc = ProcessResult(argv=argv, cwd=str(source_root), exit_code=None, duration_s=0.0, note=str(e))
        return done(proc, False, f"lean {module} did not run: cannot prepare {olean.parent}: {e.strerror or e}",
                    f"cannot prepare the output folder {olean.parent}: {e.strerror or e}")
    run_env = tool_environment(setup.environment(search_path), env, pass_env=config.pass_env)
    confinement = compile_confinement(setup, source_root=source_root, out_root=out_root, search_path=search_path,
                                      confinement=confinement, readable=config.sandbox_readable)
    proc = run_process(argv, cwd=source_root, timeout_s=config.build_timeout, memory_mb=config.memory_limit_mb,
                       sandbox=config.sandbox, confinement=confinement, env=run_env, log_path=log_path,
                       lean_kind="build")
    parsed = parse_lean_json(proc.output)
    more: dict[str, Any] = {"diagnostics": parsed.diagnostics, "unrecognized": parsed.unrecognized}
    what = f"lean {module}"
    blamed = next((d.text.splitlines()[0] for d in parsed.diagnostics
                   if d.severity == "error" and _ENVIRONMENT.search(d.text)), None)
    blamed = blamed or next((line.strip() for line in parsed.unrecognized if _ENVIRONMENT.search(line)), None)
    if proc.refused or (proc.exit_code is None and not proc.timed_out):
        return done(proc, False, f"{what} did not run: {proc.describe()}", proc.describe(), **more)
    if proc.timed_out:
        return done(proc, False, f"{what} was {proc.describe()}", **more)
    if proc.memory_exceeded:
        return done(proc, False, f"{what} {proc.describe()}", **more)
    if proc.exit_code == 127 or "bwrap: execvp" in proc.output:
        where = ("inside the sandbox: the project and your home are hidden there; add its folder to "
                 "[lean] sandbox_readable" if proc.sandboxed else "exit code 127")
        return done(proc, False, f"{what} failed ({proc.describe()})",
                    f"{argv[0]} or a program it runs cannot be found ({where})", **more)
    errors = [d for d in parsed.diagnostics if d.severity == "error"]
    if proc.exit_code < 0:
        return done(proc, False, f"{what} {proc.describe()}",
                    blamed or f"lean {proc.describe()}: a toolchain crash (or a corrupt .olean it read)", **more)
    if proc.crashed_in_sandbox and not errors:
        # bubblewrap reports a command its init saw die of signal N as exit 128 + N (observed:
        # a segfaulting lean exits 139 inside it; tests/test_compile.py)
        return done(proc, False, f"{what} {proc.describe()}",
                    blamed or f"lean {proc.describe()}: a toolchain crash (or a corrupt .olean it read)", **more)
    first = errors[0] if errors else None
    first_text = (f"; first error: {first.file}:{first.line}:{first.column}: {first.text.splitlines()[0]}"
                  if first is not None and first.text else "")
    if proc.exit_code != 0:
        sample = "" if first is not None else (
            f"; it printed: {parsed.unrecognized[-1][:200]!r}" if parsed.unrecognized else "; it printed nothing")
        return done(proc, False, f"{what} failed ({proc.describe()}){first_text}{sample}", blamed, **more)
    if errors:
        return done(proc, False, f"{what} exited 0 but reported {len(errors)} error(s){first_text}", blamed, **more)
    if parsed.unrecognized:
        return done(proc, False, (f"{what} exited 0 but printed {len(parsed.unrecognized)} line(s) that are not Lean "
                                  f"messages (e.g. {parsed.unrecognized[0][:80]!r}): cannot confirm the compile"), **more)
    if not _regular(olean):
        return done(proc, False, f"{what} exited 0 but wrote no .olean at {olean}", **more)
    warnings = sum(d.severity == "warning" for d in parsed.diagnostics)
    return done(proc, True, f"{what}: compiled ({warnings} warning{'s' if warnings != 1 else ''})", olean=str(olean),
                **more)
