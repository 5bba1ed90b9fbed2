"""Test double of the Lean toolchain's ``lake`` executable (no Lean runs in CI).

It stands in for ``lake --version``, ``lake build <module>...``, ``lake build fyan-inspector``
(building Fyan's trusted inspector) and ``lake env <program> <args>`` (the inspector, a kernel
checker, comparator), printing output in the formats real Lake and Lean print
(``shared/lean-samples/``: ``✔ [n/m] Built X (t)`` progress lines, ``warning: F:L:C:
declaration uses `sorry``` messages, ``Build completed successfully (N jobs).``).

``lake build`` "compiles" each module (and, first, the workspace modules it imports, and those of
a package ``lakefile.toml`` requires by ``path``, in that package's folder) into a
stand-in ``.olean`` under ``.lake/build/lib/lean`` (JSON with the module's source) and a
``.trace`` (the source's SHA-256); like Lake, an output whose trace matches the source is
**reused**, not rebuilt ("Replayed"), so a planted output is trusted where a real Lake would
trust it. ``lake build fyan-inspector`` (in a folder with ``FyanInspector.lean``) writes a shim
at ``.lake/build/bin/fyan-inspector`` that runs ``tests/fakes/fake_inspector.py``, the double of
the trusted inspector (its docstring says what it emulates: notably any ``sorry``/``admit`` in
a candidate is ``sorryAx``, unless a scenario says otherwise).

Default behaviour is a clean toolchain: every build succeeds. Scenario overrides, for the gate
and cheat tests, come from the JSON file named by ``FAKE_LAKE_SCENARIO`` (the inspector's keys
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
     "version": {"exit": 0, "output": "..."}}        # `lake --version`

Every call is appended to ``FAKE_LAKE_LOG`` when set, so tests can see what Fyan ran.
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


def scenario() -> dict:
    path = os.environ.get("FAKE_LAKE_SCENARIO")
    return json.loads(Path(path).read_text()) if path else {}


def log(argv: list[str]) -> None:
    path = os.environ.get("FAKE_LAKE_LOG")
    if path:
        try:
            with open(path, "a") as fh:
                fh.write(json.dumps({"argv": argv, "cwd": os.getcwd()}) + "\n")
        except OSError:  # inside the sandbox the log's folder is read-only
            pass


def module_file(module: str) -> Path:
    return Path(*module.split(".")).with_suffix(".lean")


def behave(spec: dict) -> None:
    """Sleep and/or die by a signal as a scenario section says."""
    if spec.get("sleep"):
        time.sleep(float(spec["sleep"]))
    if spec.get("signal"):
        sys.stdout.flush()
        os.kill(os.getpid(), int(spec["signal"]))


def imports_of(text: str) -> list[str]:
    return re.findall(r"(?m)^import\s+(\S+)", text)


def olean_of(module: str) -> Path:
    return Path(".lake/build/lib/lean") / Path(*module.split(".")).with_suffix(".olean")


def required_roots() -> list[Path]:
    """Folders of the packages the workspace's ``lakefile.toml`` requires by ``path`` (Lake builds
    such a dependency in its own folder, ``<path>/.lake/build``)."""
    try:
        import tomllib

        data = tomllib.loads(Path("lakefile.toml").read_text())
    except (OSError, ValueError):
        return []
    return [Path(r["path"]) for r in data.get("require", []) if isinstance(r, dict) and r.get("path")]


def root_of(module: str) -> Path | None:
    """The package folder holding ``module``'s source: the workspace, else a required package."""
    for root in [Path("."), *required_roots()]:
        if (root / module_file(module)).is_file():
            return root
    return None


def compile_module(module: str, sc: dict, done: dict[str, str]) -> bool:
    """Build ``module`` and the modules it imports (imports first), of the workspace or of a
    package it requires by path (built in that package's folder, as Lake does); ``done``:
    module -> verb used. False when a module's source is missing."""
    if module in done:
        return True
    root = root_of(module)
    if root is None:
        return False
    path = root / module_file(module)
    text = path.read_text()
    for dep in imports_of(text):
        if root_of(dep) is not None and not compile_module(dep, sc, done):
            return False
    digest = hashlib.sha256(text.encode()).hexdigest()
    olean, trace = root / olean_of(module), (root / olean_of(module)).with_suffix(".trace")
    if olean.is_file() and trace.is_file() and trace.read_text() == digest:
        done[module] = "Replayed"  # Lake trusts an up-to-date output
        return True
    olean.parent.mkdir(parents=True, exist_ok=True)
    olean.write_text(json.dumps({"fake_olean": 1, "module": module, "source": text}))
    trace.write_text(digest)
    done[module] = "Built"
    return True


def build(modules: list[str], sc: dict) -> int:
    spec = sc.get("build", {})
    if sc.get("build_only") and not set(modules) & set(sc["build_only"]):
        spec = {}
    behave(spec)
    if sc.get("build_hook") and (not sc.get("build_only") or set(modules) & set(sc["build_only"])):
        subprocess.run([sc["build_hook"]], check=False)
    done: dict[str, str] = {}
    if "output" in spec:  # the given output; the modules are still compiled when it says success
        if int(spec.get("exit", 0)) == 0:
            for module in modules:
                compile_module(module, sc, done)
        module = modules[-1]
        print(spec["output"].replace("@MODULE@", module).replace("@FILE@", module_file(module).as_posix()))
        return int(spec.get("exit", 0))
    for module in modules:
        if not compile_module(module, sc, done):
            print(f"error: unknown module '{module}'")
            return 1
    total = len(done)
    for i, (module, verb) in enumerate(done.items(), start=1):
        path = root_of(module) / module_file(module)
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


def env_program(argv: list[str], sc: dict) -> int:
    spec = sc.get("kernel_replay")
    if spec is not None and Path(argv[0]).name in ("leanchecker", "lean4checker"):
        behave(spec)
        if spec.get("output"):
            print(spec["output"])
        return int(spec.get("exit", 0))
    code = subprocess.run(argv).returncode
    if code < 0:  # a program killed by a signal: die by it too, as `lake env` (exec) does
        sys.stdout.flush()
        os.kill(os.getpid(), -code)
    return code


def main(argv: list[str]) -> int:
    log(argv)
    sc = scenario()
    if argv[:1] == ["--version"]:
        spec = sc.get("version", {})
        behave(spec)
        print(spec.get("output", "Lake version 5.0.0-fake (Lean version 4.31.0) [Fyan test double]"))
        return int(spec.get("exit", 0))
    if argv[:2] == ["build", "fyan-inspector"] and Path("FyanInspector.lean").is_file():
        return build_inspector(sc)
    if argv[:1] == ["build"] and len(argv) >= 2:
        return build(argv[1:], sc)
    if argv[:1] == ["env"] and len(argv) >= 2:
        return env_program(argv[1:], sc)
    print(f"fake lake: unsupported arguments {argv}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    raise SystemExit(main(sys.argv[1:]))
