"""Files trusted by name: ``fyan.sandbox.safefile`` and every place that reads or
copies a file an agent could have written — workspace preparation, the stage checks, the
completion gate, SA-Pass, the command agent's snapshot.

Each hostile kind stands where Fyan expects a file: a FIFO (``open`` blocks until a writer
comes), a link to a regular file outside, a link to ``/dev/zero`` (never ends), a character
device made with ``mknod`` (root only), a sparse file of 10 GiB (costs nothing on disk, 10 GiB of
memory to read whole), a folder with the file's name. A guard (``SIGALRM``) turns a hang into a
failure. The 10 GiB variant is never run against code that reads it whole.
"""

from __future__ import annotations

import json
import os
import signal
import stat
from pathlib import Path

import pytest

from fyan.sandbox import safefile
from fyan.state.models import RunStatus, Stage
from tests import gate_harness as h
from tests.helpers import ingested

KINDS = ["fifo", "link_to_file", "link_to_dev_zero", "device", "sparse_10g", "folder"]
TEN_GIB = 10 * 1024 ** 3


@pytest.fixture(autouse=True)
def no_hang():
    """Fail (instead of hanging the suite) when anything blocks for 60 s."""
    def alarm(signum, frame):
        raise TimeoutError("blocked for 60 s: a file was opened or read that should have been refused")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def plant(path: Path, kind: str, outside: Path) -> None:
    """Put a hostile ``kind`` at ``path`` (whatever was there is removed)."""
    if path.is_dir() and not path.is_symlink():
        import shutil
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link_to_file":
        outside.write_text("a file outside the workspace\n")
        os.symlink(outside, path)
    elif kind == "link_to_dev_zero":
        os.symlink("/dev/zero", path)
    elif kind == "device":
        if os.geteuid() != 0:
            pytest.skip("mknod of a character device needs root (CI runs as root)")
        try:
            os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 5))  # the numbers of /dev/zero
        except PermissionError as e:
            pytest.skip(f"mknod refused here: {e}")
    elif kind == "sparse_10g":
        with open(path, "wb") as fh:
            fh.truncate(TEN_GIB)
    elif kind == "folder":
        (path / "inside").mkdir(parents=True)
    else:  # pragma: no cover
        raise AssertionError(kind)


WHAT = {"fifo": "FIFO", "link_to_file": "symbolic link", "link_to_dev_zero": "symbolic link",
        "device": "character device", "sparse_10g": "more than the cap", "folder": "folder"}


# -- the helper itself ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_only_a_regular_file_under_the_cap_is_read(tmp_path, kind):
    path = tmp_path / "lakefile.toml"
    plant(path, kind, tmp_path / "outside.txt")
    with pytest.raises(safefile.UnsafeFile) as e:
        safefile.read_bytes(path)
    assert str(path) in str(e.value) and WHAT[kind] in str(e.value)
    assert safefile.is_regular(path) == (kind == "sparse_10g")


def test_a_regular_file_is_read_and_the_cap_is_configurable(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"x" * 100)
    assert safefile.read_bytes(path) == b"x" * 100 and safefile.read_text(path) == "x" * 100
    with pytest.raises(safefile.UnsafeFile, match="more than the cap of 99 bytes"):
        safefile.read_bytes(path, limit=99)
    old = safefile.default_limit()
    try:
        safefile.configure(50)
        with pytest.raises(safefile.UnsafeFile, match="cap of 50 bytes"):
            safefile.read_bytes(path)
    finally:
        safefile.configure(old)
    with pytest.raises(FileNotFoundError):
        safefile.read_bytes(tmp_path / "missing")


def test_the_cap_comes_from_the_project_configuration(tmp_path):
    from tests.helpers import make_project

    old = safefile.default_limit()
    try:
        make_project(tmp_path / "p", extra_toml="[lean]\nmax_file_mb = 3\n")
        assert safefile.default_limit() == 3 * 1024 * 1024
    finally:
        safefile.configure(old)


@pytest.mark.parametrize("kind", KINDS)
def test_writing_replaces_what_stands_there_without_opening_it(tmp_path, kind):
    path = tmp_path / "lean-toolchain"
    outside = tmp_path / "outside.txt"
    plant(path, kind, outside)
    safefile.write_text(path, "leanprover/lean4:v4.31.0\n", replace_folder=True)
    assert safefile.is_regular(path) and path.read_text() == "leanprover/lean4:v4.31.0\n"
    if kind == "link_to_file":
        assert outside.read_text() == "a file outside the workspace\n"  # not written through
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_folder_is_not_replaced_unless_asked(tmp_path):
    (tmp_path / "x" / "inside").mkdir(parents=True)
    with pytest.raises(IsADirectoryError):
        safefile.write_text(tmp_path / "x", "text")


# -- workspace preparation ------------------------------------------------------------------------


@pytest.fixture
def honest(fake_lake, tmp_path) -> h.Setup:
    return h.setup(tmp_path / "p", h.HONEST)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["lakefile.toml", "lean-toolchain", "module file"])
def test_workspace_preparation_replaces_a_hostile_file_without_reading_it(honest, tmp_path, kind, name):
    """An agent leaves a FIFO, a device, a link, a huge sparse file or a folder where Fyan rewrites
    its workspace's files; the next preparation neither hangs nor reads it, and puts the regular
    file back (on main a FIFO as ``lakefile.toml`` hung here)."""
    from fyan.lakepackage.workspace import prepare_workspace

    p, store = honest.project, honest.store
    unit = store.unit("thm-root")
    ws = prepare_workspace(p, unit, {"Basic": honest.basic.read_text()}, store=store)
    path = {"module file": ws.root / h.LIB / "ThmRoot" / "Basic.lean", "lean-toolchain": ws.root / "lean-toolchain",
            "lakefile.toml": ws.root / "lakefile.toml"}[name]
    expected = path.read_text()
    plant(path, kind, tmp_path / "outside.txt")
    prepare_workspace(p, unit, {"Basic": honest.basic.read_text()}, store=store)
    assert safefile.is_regular(path) and path.read_text() == expected
    if kind == "link_to_file":
        assert (tmp_path / "outside.txt").read_text() == "a file outside the workspace\n"


# -- the stage checks (the gateway reads the attempt's files) ------------------------------------


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "sparse_10g"])  # next test: the sparse file
def test_a_stage_check_refuses_a_hostile_attempt_file_with_the_reason(tmp_path, kind):
    project, gw = ingested(tmp_path / "p")
    from fyan.stages import stage_checks

    gw.checks = stage_checks()
    unit = gw.store.units()[0].id
    run = gw.begin(unit, Stage.REASON, 3)
    plant(project.paths.root / run.attempt_dir / "proof.md", kind, tmp_path / "outside.txt")
    done = gw.finish(run)
    assert done.status is RunStatus.FAILED
    assert "proof.md" in done.reason and ("regular file" in done.reason or "left no" in done.reason), done.reason


def test_a_stage_check_refuses_a_regular_file_over_the_cap(tmp_path):
    """A sparse file under the attempt's name is a regular file: the check reads it through the
    helper, which refuses it above the cap (the reason names the cap)."""
    project, gw = ingested(tmp_path / "p")
    from fyan.stages import stage_checks

    gw.checks = stage_checks()
    unit = gw.store.units()[0].id
    run = gw.begin(unit, Stage.REASON, 3)
    with open(project.paths.root / run.attempt_dir / "proof.md", "wb") as fh:
        fh.truncate(TEN_GIB)
    done = gw.finish(run)
    assert done.status is RunStatus.FAILED and "more than the cap" in done.reason, done.reason


# -- the completion gate ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_the_gate_fails_closed_on_a_hostile_recorded_file(honest, tmp_path, kind, fake_lake):
    plant(honest.basic, kind, tmp_path / "outside.txt")
    report = honest.gate(None, fake=fake_lake)
    assert not report.passed
    text = json.dumps(report.model_dump(mode="json"))
    assert "Basic.lean" in text


# -- SA-Pass ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_sa_pass_reports_a_hostile_submission_and_goes_on(tmp_path, kind):
    from fyan.shadow.evaluate import run_eval
    from fyan.shadow.shadowset import load_shadow_sets
    from tests.test_shadow import DEMO, HandMade

    subs = tmp_path / "subs"
    subs.mkdir()
    plant(subs / "mathd_algebra_182.lean", kind if kind != "folder" else "fifo", tmp_path / "outside.txt")
    sets = {k: v for k, v in load_shadow_sets(DEMO / "shadows").items() if k == "mathd_algebra_182"}
    result = run_eval(sets, DEMO / "shadows", subs, tmp_path / "out", HandMade())
    (report,) = result.reports
    assert not report.compile.passed and report.compile.reason.startswith("cannot read"), report.compile.reason


# -- the command agent's snapshot -----------------------------------------------------------------


def test_the_command_agent_snapshot_reads_no_hostile_file(tmp_path):
    from fyan.agents.providers.command import MAX_FILE_BYTES, changed_files, snapshot
    from fyan.errors import ProviderError

    root = tmp_path / "ws"
    root.mkdir()
    (root / "Basic.lean").write_text("theorem t : True := trivial\n")
    before = snapshot(root)
    for kind, name in (("fifo", "pipe.lean"), ("link_to_dev_zero", "zero.lean"), ("folder", "dir.lean")):
        plant(root / name, kind, tmp_path / "outside.txt")
    assert changed_files(root, before) == {}  # nothing but regular files is taken, nothing blocked
    with open(root / "huge.lean", "wb") as fh:
        fh.truncate(TEN_GIB)
    assert snapshot(root)["huge.lean"] == f"oversize:{TEN_GIB}"
    with pytest.raises(ProviderError, match=f"limit {MAX_FILE_BYTES}"):
        changed_files(root, before)
