"""Shared fixtures.

``fake_lake`` installs the toolchain test double (``tests/fakes/fake_lake.py``), which stands in
for Lean's ``lake`` (no Lean toolchain can run in CI); see its docstring for what it prints.
``no_lake`` makes sure no real or fake toolchain is found.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _shared() -> Path:
    """The workplace's shared folder (corpus and Lean samples): $FYAN_SHARED_DIR, the
    checkout's sibling ``shared/``, or /work/shared."""
    for candidate in (os.environ.get("FYAN_SHARED_DIR"), ROOT.parent / "shared", "/work/shared"):
        if candidate and (Path(candidate) / "corpus").is_dir():
            return Path(candidate)
    return ROOT.parent / "shared"


SHARED = _shared()
CORPUS = SHARED / "corpus"
SAMPLES = SHARED / "lean-samples"
EXAMPLE = ROOT / "projects" / "taste-number-theory"


def corpus(rel: str) -> Path:
    path = CORPUS / rel
    if not path.exists():
        pytest.skip(f"corpus file {rel} not available at {CORPUS}")
    return path


class FakeLake:
    def __init__(self, tmp: Path) -> None:
        self.dir = tmp
        self.path = tmp / "lake"
        self.log = tmp / "calls.jsonl"
        self.scenario_file = tmp / "scenario.json"
        self.path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "tests/fakes/fake_lake.py"}" "$@"\n')
        self.path.chmod(0o755)

    def scenario(self, data: dict) -> None:
        self.scenario_file.write_text(json.dumps(data))
        os.environ["FAKE_LAKE_SCENARIO"] = str(self.scenario_file)

    def calls(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def fake_lake(tmp_path_factory, monkeypatch) -> FakeLake:
    fake = FakeLake(tmp_path_factory.mktemp("fake-lake"))
    monkeypatch.setenv("FYAN_LEAN__LAKE", str(fake.path))
    monkeypatch.setenv("FAKE_LAKE_LOG", str(fake.log))
    # the double is not untrusted code, and it writes its call log outside the workspace, which
    # the bubblewrap sandbox makes read-only: run it unsandboxed (as
    # scripts/build_example_cassette.py does; tests/test_sandbox.py exercises the sandbox itself)
    monkeypatch.setenv("FYAN_LEAN__SANDBOX", "off")
    monkeypatch.delenv("FAKE_LAKE_SCENARIO", raising=False)
    return fake


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
