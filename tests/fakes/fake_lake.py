"""Test double of the Lean toolchain's ``lake`` executable (no Lean runs in CI).

It stands in for ``lake --version``, ``lake build <module>...``, ``lake build fyan-inspector``
(building Fyan's trusted inspector) and ``lake env <program> <args>`` (the inspector, a kernel
checker, comparator), printing output in the formats real Lake and Lean print
(``shared/lean-samples/``: ``✔ [n/m] Built X (t)`` progress lines, ``warning: F:L:C:
declaration uses `sorry``` messages, ``Build completed successfully (N jobs).``).

``lake build`` keeps building the other targets when one fails, as Lake does without
``--fail-fast`` (Lake's own test ``tests/lake/tests/failFast/test.sh`` in leanprover/lean4:
"without --fail-fast, an early failure does not stop other targets"), and ends with Lake's summary
(``Some required targets logged failures:`` then ``- <module>`` per failed module, ``error: build
failed``); a module whose import failed is not built and not listed. Sources are read below the
package folder (``srcDir`` is not modelled). Imports are read from each
source's header by ``fyan.lean.header`` (Lean's header grammar). ``lake build`` follows Lake's rebuild rule for the modules it stands in for: a module owned by
the package in the working folder (a ``lean_lib`` root of its ``lakefile.toml`` is a prefix of
it; every module with a source when there is no lakefile) is compiled, imports first, into a
stand-in ``.olean`` under that package's ``.lake/build/lib/lean`` (JSON with the module's
source; a ``.trace`` with its SHA-256 beside it) when that ``.olean`` is missing or older than
its source or than any import's ``.olean``; otherwise it is **reused**, not rebuilt
("Replayed"), so a planted output is trusted where a real Lake would trust it. An import no
local library owns is read from the search path (this package's build folder, then each
``.lake/packages/*``'s) and never rebuilt; a missing one fails as Lean does (``object file …
of module … does not exist``). Toolchain and Mathlib imports (``Init``, ``Mathlib``, …) are not
modelled. The log prints ``✔ [i/n] Built M (t)`` lines as real Lake does
(``tests/fixtures/lean-samples/``). A package the ``lakefile.toml`` requires by ``path``
(``[[require]] path = ...``, an adopted Lake package) is built by the same rule in its own folder,
as Lake builds a path dependency. What it does not model: Lake's trace hashes (it decides by
modification time only), job parallelism, ``.ilean``/``.c`` outputs, and what compiling costs.
Each compilation is appended to ``FYAN_FAKE_COMPILES`` when set (module, package folder). ``lake build fyan-inspector`` (in a folder with ``FyanInspector.lean``) writes a shim
at ``.lake/build/bin/fyan-inspector`` that runs ``tests/fakes/fake_inspector.py``, the double of
the trusted inspector (its docstring says what it emulates: notably any ``sorry``/``admit`` in
a candidate is ``sorryAx``, unless a scenario says otherwise).

Default behaviour is a clean toolchain: every build succeeds. Scenario overrides, for the gate
and cheat tests, come from the JSON file named by ``FYAN_FAKE_SCENARIO`` (the inspector's keys
are documented in ``fake_inspector.py``):

    {"build": {"exit": 1, "output": "...",          # replaces the build output (@MODULE@ and
               "sleep": 5, "signal": 11},            #  @FILE@ are substituted); sleep first;
                                                     #  or die by a signal
     "build_only": ["<module>"],                     # "build" applies only to these targets
     "build_hook": "/path/script",                   # run in the workspace during the build (what
                                                     #  compile-time code of a candidate could do)
     "sorry_warnings": true,                         # warnings for `sorry` in source (default)
     "inspector_build": {"exit": 1, "output": "..."},  # `lake build fyan-inspector` fails
     "kernel_replay": {"exit": 1, "output": "..."},  # `lake env <leanchecker> <module>`
     "version": {"exit": 0, "output": "..."},        # `lake --version`
     "lean_version": "4.32.1",                       # the whole double (lake, lean, the inspector)
                                                     #  is a toolchain of this Lean version
     "update": {"exit": 1, "output": "..."},         # `lake update` fails (offline)
     "cache_get": {"fail_after": 3, "kill_after": 3}}  # `lake exe cache get` (see cache_get)

``lake build :blueprint`` / ``:blueprintJson`` model LeanArchitect's package facets
(``architect_facets``, written by ``fake_architect.py``; docs/lean-contract.md, "LeanArchitect").

``lake update`` and ``lake exe cache get`` model fetching a Git dependency and Mathlib's prebuilt
cache (see ``update`` and ``cache_get``; docs/lean-contract.md, "Fetching dependencies").

Every call is appended to ``FYAN_FAKE_LOG`` when set, so tests can see what Fyan ran.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the Lean version the double's toolchain reports: that of Fyan's default pin
#: (``fyan.lean.mathlib.DEFAULT``, a release with every 2026 kernel soundness fix)
LEAN_VERSION = "4.34.1"


def scenario() -> dict:
    path = os.environ.get("FYAN_FAKE_SCENARIO")
    return json.loads(Path(path).read_text()) if path else {}


def log(argv: list[str]) -> None:
    path = os.environ.get("FYAN_FAKE_LOG")
    if path:
        try:
            with open(path, "a") as fh:
                fh.write(json.dumps({"argv": argv, "cwd": os.getcwd()}) + "\n")
        except OSError:  # inside the sandbox the log's folder is read-only
            pass


def module_file(module: str) -> Path:
    return Path(*module.split(".")).with_suffix(".lean")


def limited(spec: dict, name: str) -> dict:
    """``spec`` for its first ``times`` uses (counted in ``<scenario file>.<name>.count``), then
    ``{}``: a toolchain that crashes twice, then works. Without ``times``: ``spec`` always."""
    path = os.environ.get("FYAN_FAKE_SCENARIO")
    if not spec or "times" not in spec or not path:
        return spec
    counter = Path(f"{path}.{name}.count")
    try:
        used = int(counter.read_text())
    except (OSError, ValueError):
        used = 0
    try:
        counter.write_text(str(used + 1))
    except OSError:
        pass
    return spec if used < int(spec["times"]) else {}


def behave(spec: dict) -> None:
    """Sleep and/or die by a signal as a scenario section says."""
    if spec.get("sleep"):
        time.sleep(float(spec["sleep"]))
    if spec.get("signal"):
        sys.stdout.flush()
        os.kill(os.getpid(), int(spec["signal"]))


def imports_of(text: str) -> list[str]:
    """The modules a source imports, read from its header as Lean reads it (``fyan.lean.header``,
    which follows ``Lean.Parser.Module.header``: docs/lean-contract.md, "Lean headers")."""
    if str(ROOT) not in sys.path:  # this checkout's fyan, as fake_inspector.py does
        sys.path.insert(0, str(ROOT))
    from fyan.lean.header import read_header

    return read_header(text).modules


BUILD_LIB = Path(".lake/build/lib/lean")


def olean_of(module: str, package: Path = Path(".")) -> Path:
    return package / BUILD_LIB / Path(*module.split(".")).with_suffix(".olean")


def _lakefile(package: Path) -> dict | None:
    lakefile = package / "lakefile.toml"
    if not lakefile.is_file():
        return None
    import tomllib

    try:
        return tomllib.loads(lakefile.read_text())
    except ValueError:
        return None


def lib_roots(package: Path = Path(".")) -> list[str] | None:
    """The module roots of the package's ``lean_lib`` targets (``roots``, default the library's
    name), as Lake reads them from ``lakefile.toml``; None without one (the double then owns
    every module it finds a source for; a ``lakefile.lean`` is not evaluated)."""
    data = _lakefile(package)
    if data is None:
        return None
    out = []
    for lib in data.get("lean_lib", []):
        roots = lib.get("roots", [lib["name"]])
        out += [roots] if isinstance(roots, str) else list(roots)  # a string or an array (decodeArrayOrSingleton)
    return out


def required_packages(package: Path = Path(".")) -> list[Path]:
    """Folders of the packages ``package``'s ``lakefile.toml`` requires by ``path`` (Lake builds
    such a dependency in its own folder, ``<path>/.lake/build``)."""
    data = _lakefile(package) or {}
    return [package / r["path"] for r in data.get("require", []) if isinstance(r, dict) and r.get("path")]


def owned(module: str, roots: list[str] | None, package: Path = Path(".")) -> bool:
    """Whether a library of this package owns ``module`` (a root is a prefix of it, Lake's
    ``LeanLib.isLocalModule``)."""
    if roots is None:
        return (package / module_file(module)).is_file()
    return any(module == r or module.startswith(r + ".") for r in roots)


def search_path(package: Path = Path(".")) -> list[Path]:
    """Where ``lean`` looks for the ``.olean`` of a module no local library owns: this
    package's build folder, then each dependency's (``.lake/packages/*``, path requirements),
    as ``LEAN_PATH``."""
    out = [package / BUILD_LIB]
    packages = package / str((_lakefile(package) or {}).get("packagesDir", ".lake/packages"))  # Lake's option
    if packages.is_dir():
        out += [p / BUILD_LIB for p in sorted(packages.iterdir())]
    out += [p / BUILD_LIB for p in required_packages(package)]
    return out


class BuildError(Exception):
    """A module that does not build: ``module`` is the one whose compilation failed (Lake lists
    it under ``Some required targets logged failures:``)."""

    def __init__(self, message: str, module: str = "") -> None:
        super().__init__(message)
        self.module = module


#: module -> the package folder it was compiled (or replayed) in, for the build's log lines
BUILT_IN: dict[str, Path] = {}


def compile_module(module: str, sc: dict, done: dict[str, str], roots: list[str] | None = None,
                   package: Path = Path(".")) -> int:
    """Bring ``module`` up to date with Lake's rebuild rule, imports first; returns its
    ``.olean``'s modification time (ns). ``done``: module -> verb (``Built``/``Replayed``).

    A module owned by ``package`` is recompiled when its ``.olean`` is missing or older than
    its source or than any import's ``.olean``; the output lands in that package's
    ``.lake/build/lib/lean``. An import owned by a package required by ``path`` is brought up to
    date the same way in that package's folder. Any other import must already be compiled
    somewhere on the search path (``search_path``); it is read, never rebuilt. Raises
    ``BuildError`` with Lake's/Lean's message otherwise."""
    if module in done:
        return olean_of(module, BUILT_IN.get(module, package)).stat().st_mtime_ns
    path = package / module_file(module)
    if not path.is_file():
        raise BuildError(f"error: no such file or directory (error code: 2)\n  file: ./{module_file(module).as_posix()}",
                         module)
    text = path.read_text()
    newest = path.stat().st_mtime_ns
    for dep in imports_of(text):
        if owned(dep, roots, package) and (package / module_file(dep)).is_file():
            newest = max(newest, compile_module(dep, sc, done, roots, package))
            continue
        if dep.split(".")[0] in ("Init", "Mathlib", "Std", "Lean", "Batteries", "Aesop", "Qq", "Architect"):
            continue  # the toolchain's, Mathlib's and LeanArchitect's modules: not modelled
        req = next((r for r in required_packages(package) if (r / module_file(dep)).is_file()), None)
        if req is not None:  # a path dependency: built in its own folder, by its own lakefile
            newest = max(newest, compile_module(dep, sc, done, lib_roots(req), req))
            continue
        rel = Path(*dep.split(".")).with_suffix(".olean")
        found = next((d / rel for d in search_path(package) if (d / rel).is_file()), None)
        if found is None:
            raise BuildError(f"error: {module_file(module).as_posix()}:1:0: object file {olean_of(dep).as_posix()} "
                             f"of module {dep} does not exist", module)
        newest = max(newest, found.stat().st_mtime_ns)
    BUILT_IN[module] = package
    olean, trace = olean_of(module, package), olean_of(module, package).with_suffix(".trace")
    if olean.is_file() and olean.stat().st_mtime_ns >= newest:
        done[module] = "Replayed"  # Lake trusts an up-to-date output
        return olean.stat().st_mtime_ns
    olean.parent.mkdir(parents=True, exist_ok=True)
    olean.write_text(json.dumps({"fake_olean": 1, "module": module, "source": text}))
    trace.write_text(hashlib.sha256(text.encode()).hexdigest())
    done[module] = "Built"
    compiled = os.environ.get("FYAN_FAKE_COMPILES")
    if compiled:  # one line per module compilation, for tests and scripts/bench_builds.py
        try:
            with open(compiled, "a") as fh:
                fh.write(json.dumps({"module": module, "package": str(package.resolve())}) + "\n")
        except OSError:
            pass
    mtime = max(olean.stat().st_mtime_ns, newest)
    if mtime != olean.stat().st_mtime_ns:  # a clock behind a source written "in the future"
        os.utime(olean, ns=(mtime, mtime))
    return mtime


def build(modules: list[str], sc: dict) -> int:
    spec = sc.get("build", {})
    if sc.get("build_only") and not set(modules) & set(sc["build_only"]):
        spec = {}
    behave(spec)
    if sc.get("build_hook") and (not sc.get("build_only") or set(modules) & set(sc["build_only"])):
        subprocess.run([sc["build_hook"]], check=False)
    done: dict[str, str] = {}
    roots = lib_roots()
    if "output" in spec:  # the given output; the modules are still compiled when it says success
        if int(spec.get("exit", 0)) == 0:
            try:
                for module in modules:
                    compile_module(module, sc, done, roots)
            except BuildError:
                pass
        module = modules[-1]
        print(spec["output"].replace("@MODULE@", module).replace("@FILE@", module_file(module).as_posix()))
        return int(spec.get("exit", 0))
    failed: dict[str, str] = {}
    for module in modules:
        if roots is not None and not owned(module, roots):
            print(f"error: unknown target '{module}'")
            return 1
        if not module_file(module).is_file() and roots is None:
            print(f"error: unknown module '{module}'")
            return 1
        try:
            compile_module(module, sc, done, roots)
        except BuildError as e:
            # Lake keeps building the other targets after a failure (no --fail-fast); a module
            # whose import failed is not built and logs nothing of its own
            if e.module and e.module not in failed:
                failed[e.module] = str(e)
    if failed:
        for i, (module, verb) in enumerate(done.items(), start=1):
            print(f"✔ [{i}/{len(done) + len(failed)}] {verb} {module} (0.4s)")
        for k, (module, message) in enumerate(failed.items(), start=len(done) + 1):
            print(f"✖ [{k}/{len(done) + len(failed)}] Building {module} (0.2s)")
            print(message)
            print("error: Lean exited with code 1")
        print("Some required targets logged failures:")
        for module in failed:
            print(f"- {module}")
        print("error: build failed")
        return 1
    total = len(done)
    for i, (module, verb) in enumerate(done.items(), start=1):
        path = BUILT_IN.get(module, Path(".")) / module_file(module)
        text = path.read_text()
        warnings = []
        if verb == "Built" and sc.get("sorry_warnings", True) and "set_option warn.sorry false" not in text:
            for n, line in enumerate(text.splitlines(), start=1):
                if re.search(r"\bsorry\b", line.split("--")[0]):
                    warnings.append(f"warning: {path.as_posix()}:{n}:{line.index('sorry')}: declaration uses `sorry`")
        icon = "⚠" if warnings else "✔"
        print(f"{icon} [{i}/{total}] {verb} {module} (0.4s)")
        for w in warnings:
            print(w)
    print(f"Build completed successfully ({total} job{'s' if total != 1 else ''}).")
    return int(spec.get("exit", 0))


def build_inspector(sc: dict) -> int:
    spec = sc.get("inspector_build", {})
    if "output" in spec or spec.get("exit"):
        print(spec.get("output", "error: build failed"))
        return int(spec.get("exit", 1))
    exe = Path(".lake/build/bin/fyan-inspector")
    exe.parent.mkdir(parents=True, exist_ok=True)
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "tests/fakes/fake_inspector.py"}" "$@"\n')
    exe.chmod(0o755)
    print("✔ [1/2] Built FyanInspector (1.2s)\n✔ [2/2] Built fyan-inspector (0.3s)\nBuild completed successfully (2 jobs).")
    return 0


def write_manifest() -> None:
    """Lake writes ``lake-manifest.json`` at the top of a package that has none whenever it loads
    the workspace (Lake/Load/Workspace.lean ``loadWorkspace`` → ``updateAndMaterialize`` →
    ``writeManifest``; docs/lean-contract.md), for ``build`` and ``env`` alike."""
    if (Path("lakefile.toml").is_file() or Path("lakefile.lean").is_file()) and not Path("lake-manifest.json").exists():
        data = _lakefile(Path(".")) or {}
        Path("lake-manifest.json").write_text(json.dumps(
            {"version": "1.1.0", "packagesDir": ".lake/packages", "packages": [], "name": data.get("name", ""),
             "lakeDir": ".lake"}, indent=1) + "\n")


def env_program(argv: list[str], sc: dict) -> int:
    spec = sc.get("kernel_replay")
    if spec is not None and Path(argv[0]).name in ("leanchecker", "lean4checker"):
        behave(spec)
        if spec.get("output"):
            print(spec["output"])
        return int(spec.get("exit", 0))
    # `lake env` runs the program with the workspace's search path (its own build folder, then
    # each dependency's; docs/lean-contract.md)
    env = {**os.environ, "LEAN_PATH": os.pathsep.join(str(p.resolve()) for p in search_path())}
    code = subprocess.run(argv, env=env).returncode
    if code < 0:  # a program killed by a signal: die by it too, as `lake env` (exec) does
        sys.stdout.flush()
        os.kill(os.getpid(), -code)
    return code


#: dependency libraries the double stands in for as already-fetched packages (``lake build +M``
#: of one writes a stand-in ``.olean`` into ``.lake/packages/<lib>/.lake/build/lib/lean``)
DEPENDENCY_LIBRARIES = ("Mathlib", "Batteries", "Aesop", "Qq", "Plausible", "ProofWidgets")


def build_dependency(module: str) -> int:
    build_dependency_quiet(module)
    print(f"✔ [1/1] Built {module} (0.1s)\nBuild completed successfully (1 job).")
    return 0


def git_requires(package: Path = Path(".")) -> dict[str, dict]:
    """The Git packages ``lakefile.toml`` requires (name → its table): what ``lake update``
    clones."""
    data = _lakefile(package) or {}
    return {r["name"]: r for r in data.get("require", []) if isinstance(r, dict) and r.get("name") and not r.get("path")}


#: the packages Mathlib itself requires (its lake-manifest.json lists them; cloned with it)
MATHLIB_REQUIRES = ("batteries", "aesop", "qq", "plausible", "proofwidgets")


def update(sc: dict) -> int:
    """``lake update``: resolve the Git requirements, clone each (and Mathlib's own) into
    ``.lake/packages/<name>`` and write ``lake-manifest.json`` listing them with the ``inputRev``
    asked for (Lake ``lake help update``: "Updates the Lake package manifest (i.e.,
    ``lake-manifest.json``), downloading and upgrading packages as needed. For each new
    (transitive) git dependency, the appropriate commit is cloned into a subdirectory of
    ``packagesDir``"). A clone of Mathlib holds its ``lean-toolchain`` (tag ``vX.Y.Z`` pins
    ``leanprover/lean4:vX.Y.Z``). The scenario's ``update`` section replaces this (an offline
    machine: ``{"exit": 1, "output": "error: ... could not resolve host"}``). Mathlib's own
    post-update hook (which runs ``cache get``) is not modelled: Fyan runs ``cache get`` itself."""
    spec = limited(sc.get("update", {}), "update")
    behave(spec)
    if "output" in spec or spec.get("exit"):
        print(spec.get("output", "error: failed to fetch"))
        return int(spec.get("exit", 1))
    requires = git_requires()
    entries = []
    names = list(requires)
    if "mathlib" in requires:
        names += [n for n in MATHLIB_REQUIRES if n not in requires]
    for name in names:
        table = requires.get(name, {})
        rev = str(table.get("rev", "")) or "main"
        url = f"https://github.com/{table.get('scope', 'leanprover-community')}/{name}{'4' if name == 'mathlib' else ''}"
        folder = Path(".lake/packages") / name
        print(f"info: {name}: cloning {url}")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "lakefile.toml").write_text(f'name = "{name}"\n')
        if name == "mathlib" and rev.startswith("v"):
            (folder / "lean-toolchain").write_text(f"leanprover/lean4:{rev}\n")
        entries.append({"url": url, "type": "git", "subDir": None, "scope": table.get("scope", ""),
                        "rev": hashlib.sha1(f"{name}@{rev}".encode()).hexdigest(), "name": name,
                        "manifestFile": "lake-manifest.json", "inputRev": rev, "inherited": name not in requires,
                        "configFile": "lakefile.toml"})
    data = _lakefile(Path(".")) or {}
    Path("lake-manifest.json").write_text(json.dumps(
        {"version": "1.1.0", "packagesDir": ".lake/packages", "packages": entries, "name": data.get("name", ""),
         "lakeDir": ".lake"}, indent=1) + "\n")
    return 0


#: how many prebuilt files the double's Mathlib cache holds
CACHE_FILES = 8


def cache_get(sc: dict) -> int:
    """``lake exe cache get`` of Mathlib (Mathlib ``Cache/Requests.lean``): downloads each
    prebuilt file not already in the cache folder (``.lake/packages/mathlib/.cache``; as
    ``<file>.part``, renamed when complete), printing ``Attempting to download N file(s)`` and
    ``Downloaded: S file(s) [attempted D/N = P%]``, or ``No files to download``; ``N download(s)
    failed`` and exit 1 when some fail; then unpacks them (here: writes the stand-in
    ``Mathlib.olean`` into Mathlib's build folder). Without a Mathlib clone there is no ``cache``
    executable (``error: unknown executable cache``). The scenario's ``cache_get`` section:
    ``{"fail_after": K}`` downloads K files, then the rest fail (offline); ``{"kill_after": K}``
    dies by SIGKILL after K files (an interrupted fetch); ``times`` as elsewhere."""
    mathlib = Path(".lake/packages/mathlib")
    if not mathlib.is_dir():
        print("error: unknown executable cache")
        return 1
    spec = limited(sc.get("cache_get", {}), "cache_get")
    cache = mathlib / ".cache"
    cache.mkdir(exist_ok=True)
    wanted = [cache / f"{i:04d}.ltar" for i in range(CACHE_FILES)]
    todo = [f for f in wanted if not f.is_file()]
    if todo:
        print(f"Attempting to download {len(todo)} file(s)", flush=True)
        failed = 0
        for done, path in enumerate(todo, start=1):
            if "kill_after" in spec and done > int(spec["kill_after"]):
                path.with_name(path.name + ".part").write_text("partial")  # a download cut short
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            if "fail_after" in spec and done > int(spec["fail_after"]):
                failed += 1
                print("Could not resolve host: lakecache.blob.core.windows.net")
                continue
            part = path.with_name(path.name + ".part")
            part.write_text(f"prebuilt {path.stem}")
            part.replace(path)
            success = done - failed
            print(f"\rDownloaded: {success} file(s) [attempted {done}/{len(todo)} = {100 * done // len(todo)}%]",
                  end="", flush=True)
        print()
        if failed:
            print(f"{failed} download(s) failed")
            return 1
    else:
        print("No files to download")
    print(f"Decompressing {len(wanted)} file(s)")
    build_dependency_quiet("Mathlib")
    print("Unpacked in 12 ms")
    return 0


def architect_facets(facets: list[str], sc: dict) -> int:
    """``lake build :blueprint`` / ``:blueprintJson``: LeanArchitect's package facets (``:f`` is the
    root package's facet ``f``, Lake ``lake help build``), written by ``fake_architect`` in the
    format of LeanArchitect's ``Architect/Output.lean`` (docs/lean-contract.md, "LeanArchitect").
    A package that does not require LeanArchitect has no such facet (Lake: ``unknown package
    facet``); the scenario's ``architect`` section replaces the run (``{"exit": 1, "output": …}``)."""
    spec = sc.get("architect", {})
    behave(spec)
    if "output" in spec or spec.get("exit"):
        print(spec.get("output", "error: build failed"))
        return int(spec.get("exit", 1))
    names = {str(r.get("name", "")).lower() for r in (_lakefile(Path(".")) or {}).get("require", []) if isinstance(r, dict)}
    unknown = [f for f in facets if f not in ("blueprint", "blueprintJson") or "leanarchitect" not in names]
    if unknown:
        print(f"error: unknown package facet '{unknown[0]}'")
        return 1
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from fake_architect import facet

    modules = facet(Path("."), set(facets))
    for i, module in enumerate(modules, start=1):
        print(f"✔ [{i}/{len(modules) + 1}] Built {module}:{facets[0]} (0.2s)")
    print(f"✔ [{len(modules) + 1}/{len(modules) + 1}] Blueprint indexing\nBuild completed successfully "
          f"({len(modules) + 1} jobs).")
    return 0


def build_dependency_quiet(module: str) -> None:
    folder = Path(".lake/packages") / module.split(".")[0].lower() / BUILD_LIB
    olean = folder / Path(*module.split(".")).with_suffix(".olean")
    olean.parent.mkdir(parents=True, exist_ok=True)
    olean.write_text(json.dumps({"fake_olean": 1, "module": module, "source": "", "dependency": True}))


def main(argv: list[str]) -> int:
    log(argv)
    argv = [a for a in argv if a != "--keep-toolchain"]  # Lake's global option (lake help): no toolchain update
    sc = scenario()
    if argv[:1] == ["--as-leanchecker"]:  # the toolchain's bin/leanchecker (FakeLake.install_kernel_checker)
        spec = sc.get("kernel_replay", {})
        behave(spec)
        if spec.get("output"):
            print(spec["output"])
        return int(spec.get("exit", 0))
    if argv[:1] == ["--version"]:
        spec = sc.get("version", {})
        behave(spec)
        print(spec.get("output", f"Lake version 5.0.0-fake (Lean version {sc.get('lean_version', LEAN_VERSION)}) "
                                  "[Fyan test double]"))
        return int(spec.get("exit", 0))
    if argv[:2] == ["build", "fyan-inspector"] and Path("FyanInspector.lean").is_file():
        return build_inspector(sc)
    if argv[:1] == ["update"]:
        return update(sc)
    if argv[:3] == ["exe", "cache", "get"]:
        return cache_get(sc)
    if argv[:1] in (["build"], ["env"]):
        if Path("lakefile.toml").is_file() and _lakefile(Path(".")) is None:
            print("error: ./lakefile.toml: package configuration has errors")
            return 1
        write_manifest()
    if argv[:1] == ["build"] and len(argv) >= 2 and all(t.startswith(":") for t in argv[1:]):
        return architect_facets([t[1:] for t in argv[1:]], sc)
    if argv[:1] == ["build"] and len(argv) >= 2:
        targets = [t[1:] if t.startswith("+") else t for t in argv[1:]]  # `+M`: the module M (lake help build)
        if all(t.split(".")[0] in DEPENDENCY_LIBRARIES for t in targets):
            return max(build_dependency(t) for t in targets)
        return build(targets, sc)
    if argv[:1] == ["env"] and len(argv) >= 2:
        return env_program(argv[1:], sc)
    print(f"fake lake: unsupported arguments {argv}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    raise SystemExit(main(sys.argv[1:]))
