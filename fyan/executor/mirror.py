"""A node's copy of one project (the *mirror*), kept between tasks.

A task's inputs (``TaskSpec``) are written into a folder laid out like the project itself —
``fyan.toml``-free (the configuration comes from the snapshot), ``units/``, ``lean/``,
``guidance/``, ``shadows/``, ``.fyan/state.db``, ``.fyan/attempts/`` — so the stage agents and
the completion gate run there unchanged, through an ordinary ``Project`` and read-only
``Store``. The mirror is a cache of the head's state, never its truth: nothing in it is read by
the head, which only takes the task's result.

* Upstream units are written once per interface version (the replica records which) and
  their Lean modules go into ``lean/<Lib>/``; a task's own unit is replaced by what the task
  carries (rows and files), and its module leaves ``lean/``.
* State rows go into the mirror's own SQLite database, with the same schema as the head's,
  written by ``fyan.state.replica`` (never the project's store) and read through ``Store``.
* ``workspaces/`` and ``lean/.lake/packages`` may be links to the node's own folders (the
  ``Site``): on the head (``local`` backend) they are the project's, so builds run where they
  always ran and Mathlib is fetched once per project; on a Ray worker they are the worker's.
* Concurrency: tasks of different units run at once in one mirror (threads or processes); a
  lock per unit (``flock`` on ``.fyan/locks/<unit>``) serialises what touches one unit's files
  and rows, so two tasks of the same unit — a task the head gave up on and its successor —
  never interleave.

Compiled upstream modules: an interface carries the ``.olean`` the gate that
completed the unit compiled (``units/<unit>/Basic.olean``, with its recorded SHA-256), and the
mirror puts it into its ``lean/.lake/build/lib/lean`` (read-only), so a node compiles no
upstream unit: it keeps each one as long as the interface version (the completing gate run,
hence the module's content) stays, and the gate checks each against its recorded hash. A node
keeping one Mathlib per toolchain pin is ``Site.lake_packages``.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import msgpack

from fyan.executor.inputs import safe_join
from fyan.executor.bookkeeping import BOOKKEEPING
from fyan.executor.payload import PayloadError, TaskSpec, UnitData, decode_unit, interface_key
from fyan.lakepackage.package import olean_path, place_output
from fyan.state.replica import Replica, ReplicaError
from fyan.state.store import Store

Fetch = Callable[[list[str]], dict[str, bytes]]


class MirrorError(Exception):
    """The node cannot put a task's inputs in place (disk, permissions, a missing blob, a
    malformed interface): an environment problem of the node, never a proof failure."""


@dataclass(frozen=True)
class Site:
    """Where one node keeps things (``core.LocalBackend`` and ``ray_backend`` make theirs).

    ``base``: the node's folder (mirrors under ``projects/<project id>/``, prompt bundles under
    ``prompts/<hash>/``); ``workspaces``: the folder for per-unit Lake workspaces (None: inside
    the mirror); ``lake_packages``: the ``.lake/packages`` folder of built dependencies
    (Mathlib) for the project's pin, linked into the mirror's ``lean/`` (None: none on this
    node); ``lake``: this node's ``lake`` (None: the head's ``[lean] lake`` — on a ``remote``
    node only if that path exists there, else ``PATH`` and ``~/.elan/bin``)."""

    base: Path
    workspaces: Path | None = None
    lake_packages: Path | None = None
    lake: str | None = None
    name: str = "local"
    remote: bool = False


#: (mirror root, unit) -> interface version known to be in place (saves a query per dependency)
_known: dict[tuple[Path, str], int] = {}
#: (mirror root, unit) -> the files this process last put for the unit (saves listing its folder)
_listed: dict[tuple[Path, str], set[Path]] = {}


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


#: path -> SHA-1 of what this process last wrote there (saves reading the file back)
_written: dict[Path, bytes] = {}


def _write_if_changed(path: Path, data: bytes) -> None:
    digest = hashlib.sha1(data).digest()
    if _written.get(path) == digest:
        return
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            _written[path] = digest
            return
    except FileNotFoundError:
        pass
    _atomic_write(path, data)
    _written[path] = digest


_mirrors: dict[tuple[Site, str], "Mirror"] = {}
_mirrors_lock = threading.Lock()


class Mirror:
    """The mirror of project ``project_id`` on a node (module docstring)."""

    @classmethod
    def open(cls, site: Site, project_id: str) -> Mirror:
        """The mirror, set up once per process (its folders and database are checked once).
        The first tasks of a run start together (the DAG's roots): the set-up is made under a
        lock, so concurrent first tasks of this process share one mirror, and ``__init__`` takes
        a file lock, so several worker processes of a node never set up its database at once
        (that failed with "database is locked"). Raises ``MirrorError``."""
        key = (site, project_id)
        with _mirrors_lock:
            mirror = _mirrors.get(key)
            if mirror is None or not mirror.db.is_file():
                mirror = cls(site, project_id)
                _mirrors[key] = mirror
        return mirror

    def __init__(self, site: Site, project_id: str) -> None:
        self.site = site
        self.root = site.base / "projects" / project_id
        self.db = self.root / ".fyan" / "state.db"
        self._locks = self.root / ".fyan" / "locks"
        try:
            self._locks.mkdir(parents=True, exist_ok=True)
            (self.root / "lean").mkdir(parents=True, exist_ok=True)
            self._link(self.root / "workspaces", site.workspaces, create=True)
            # left dangling until Lake has built the packages there (as the project's own link)
            self._link(self.root / "lean" / ".lake" / "packages", site.lake_packages, create=False)
            with open(self._locks / "setup", "a+") as setup:  # one set-up at a time on this node
                fcntl.flock(setup.fileno(), fcntl.LOCK_EX)
                self.replica = Replica(self.db)
            self._generations: dict[str, bytes] = {}
            #: the reading side, shared by the tasks of this process (a connection per thread)
            self.store = Store(self.db)
        except (OSError, sqlite3.Error, ReplicaError) as e:
            raise MirrorError(f"cannot set up the project's copy in {self.root}: {e}") from None

    @staticmethod
    def _link(link: Path, target: Path | None, *, create: bool) -> None:
        if target is None:
            return
        if link.is_symlink():
            if Path(os.readlink(link)) == target:
                return
            link.unlink()
        elif link.exists():
            return  # a real folder someone made: leave it
        link.parent.mkdir(parents=True, exist_ok=True)
        if create:
            target.mkdir(parents=True, exist_ok=True)
        try:
            os.symlink(target, link)
        except FileExistsError:
            pass

    # -- locks -------------------------------------------------------------------------------
    @contextmanager
    def unit_lock(self, unit: str) -> Iterator[None]:
        """Hold ``unit``'s lock. The lock file carries a generation token: when another process
        wrote the unit since this one did, this process's caches of the unit are dropped."""
        fd = os.open(self._locks / hashlib.sha256(unit.encode()).hexdigest()[:32], os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            current = os.pread(fd, 64, 0)
            if self._generations.get(unit) != current:
                self._forget(unit)
            yield
            token = os.urandom(16).hex().encode()
            os.pwrite(fd, token, 0)
            self._generations[unit] = token
        finally:
            os.close(fd)  # releases the lock

    def _forget(self, unit: str) -> None:
        for p in _listed.pop((self.root, unit), set()):
            _written.pop(p, None)
        _known.pop((self.root, unit), None)
        self.replica.forget(unit)

    # -- files -------------------------------------------------------------------------------
    def _unit_files(self, data: UnitData, lib: str) -> None:
        """Make ``units/<unit>/`` hold exactly the unit's files, and its module in ``lean/``
        exactly when it is an interface (complete)."""
        unit_dir = safe_join(self.root, f"units/{data.unit}")
        wanted: set[Path] = set()
        for rel, content in data.files.items():
            path = safe_join(self.root, rel)
            _write_if_changed(path, content)
            wanted.add(path)
        key = (self.root, data.unit)
        before = _listed.get(key)
        if before is None:  # first time in this process: look at the folder
            before = {p for p in unit_dir.rglob("*") if p.is_file()} if unit_dir.is_dir() else set()
        for p in before - wanted:
            if p.is_relative_to(unit_dir):
                p.unlink(missing_ok=True)
                _written.pop(p, None)
        _listed[key] = wanted
        if not data.rows.get("units"):
            return
        module = f"{lib}.{data.rows['units'][0]['module']}.Basic"
        output = olean_path(self.root / "lean", module)
        olean = data.files.get(f"units/{data.unit}/Basic.olean")
        if data.version == 0:
            module_dir = self.root / "lean" / lib / str(data.rows["units"][0]["module"])
            if module_dir.is_dir():
                shutil.rmtree(module_dir)
            output.unlink(missing_ok=True)
        elif olean is not None:  # an upstream unit's compiled module: the node's cache of it
            place_output(output, olean)

    # -- interfaces --------------------------------------------------------------------------
    def ensure_interface(self, project_id: str, unit: str, version: int, fetch: Fetch, lib: str) -> None:
        """Put upstream ``unit``'s interface ``version`` (and, first, its own dependencies') in
        place, fetching what this node lacks. Raises ``MirrorError``."""
        if _known.get((self.root, unit)) == version:
            return
        if self.replica.version(unit) == version:
            _known[(self.root, unit)] = version
            return
        try:
            data = decode_unit(_fetch_one(fetch, interface_key(project_id, unit, version)))
        except PayloadError as e:
            raise MirrorError(str(e)) from None
        for dep, dep_version in data.deps:
            self.ensure_interface(project_id, dep, dep_version, fetch, lib)
        with self.unit_lock(unit):
            if self.replica.version(unit) != version:
                try:
                    self._unit_files(data, lib)
                    self.replica.put_unit(unit, data.rows, version)
                except (OSError, sqlite3.Error, ReplicaError, ValueError) as e:
                    raise MirrorError(f"cannot put {unit}'s interface in place: {type(e).__name__}: {e}") from None
        _known[(self.root, unit)] = version

    # -- one task ----------------------------------------------------------------------------
    def put_task(self, spec: TaskSpec, fetch: Fetch, lib: str) -> Path:
        """Put ``spec``'s inputs in place (call with the unit's lock held); returns the fresh,
        empty attempt folder. Raises ``MirrorError``."""
        try:
            for dep, version in spec.upstream:  # takes their locks: before BOOKKEEPING (its rule)
                self.ensure_interface(spec.project_id, dep, version, fetch, lib)
            with BOOKKEEPING:
                return self._put_own(spec, lib)
        except (OSError, sqlite3.Error, ValueError, ReplicaError) as e:
            raise MirrorError(f"cannot put the task's inputs in place in {self.root}: {type(e).__name__}: {e}") from None

    def _put_own(self, spec: TaskSpec, lib: str) -> Path:
        """``put_task`` after the upstream interfaces: the package's files, the unit's own files
        and rows, its guidance and shadows, the fresh attempt folder."""
        for rel, content in spec.package.items():
            _write_if_changed(safe_join(self.root, rel), content)
        self._unit_files(spec.unit, lib)
        for folder in (f"guidance/{spec.unit.unit}.md", f"shadows/{spec.unit.unit}"):
            path = safe_join(self.root, folder)
            if path.is_dir():
                shutil.rmtree(path)
                for p in [p for p in _written if p.is_relative_to(path)]:
                    del _written[p]
            elif path.is_file():
                path.unlink()
                _written.pop(path, None)
        for rel, content in spec.extra.items():
            _write_if_changed(safe_join(self.root, rel), content)
        self.replica.put_unit(spec.unit.unit, spec.unit.rows, 0, meta=spec.meta)
        _known.pop((self.root, spec.unit.unit), None)
        attempt = safe_join(self.root, str(spec.run["attempt_dir"]))
        if attempt.exists():
            shutil.rmtree(attempt)
        attempt.mkdir(parents=True)
        return attempt

    def blob_file(self, kind: str, key: str, fetch: Fetch, suffix: str = "") -> Path:
        """A shared blob (``cassette:<hash>``) as a file of this node, fetched once."""
        digest = key.split(":", 1)[1]
        path = self.site.base / "blobs" / kind / f"{digest}{suffix}"
        if not path.is_file():
            data = _fetch_one(fetch, key)
            _atomic_write(path, data)
        return path


def _fetch_one(fetch: Fetch, key: str) -> bytes:
    """Blob ``key`` from the head (``unit:…`` an upstream interface, ``prompts:…``,
    ``cassette:…``). Raises ``MirrorError``."""
    what = "an upstream unit's interface" if key.startswith("unit:") else key.split(":")[0]
    try:
        data = fetch([key]).get(key)
    except Exception as e:
        raise MirrorError(f"cannot fetch {what} ({key}) from the head: {type(e).__name__}: {e}") from None
    if data is None:
        raise MirrorError(f"the head has no {what} {key} (the unit changed after the task was handed out?)")
    return data


def prompts_folder(site: Site, key: str, fetch: Fetch) -> Path:
    """The prompts bundle ``key`` unpacked into a folder of this node, once per bundle."""
    digest = key.split(":", 1)[1]
    folder = site.base / "prompts" / digest
    if (folder / ".complete").is_file():
        return folder
    data = _fetch_one(fetch, key)
    try:
        files = msgpack.unpackb(data, raw=False)
        tmp = site.base / "prompts" / f".{digest}.{os.getpid()}.{threading.get_ident()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        for name, content in files.items():
            (safe_join(tmp, name)).write_bytes(content)
        (tmp / ".complete").write_text("")
        try:
            os.replace(tmp, folder)
        except OSError:  # another task unpacked it first
            shutil.rmtree(tmp, ignore_errors=True)
    except (OSError, ValueError, msgpack.UnpackException) as e:
        raise MirrorError(f"cannot unpack the prompts on this node: {e}") from None
    return folder
