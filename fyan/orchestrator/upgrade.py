"""``fyan upgrade --mathlib TAG``: move a project to another Mathlib tag and the toolchain it names.

Holding the project's run lock (no run changes a unit meanwhile), in this order:

1. **stage** — ``.fyan/upgrade/<tag>/`` gets a copy of the project's Lake package configuration
   (``lean/`` without its ``.lake`` and manifest) with Mathlib's ``rev`` set to ``TAG`` and
   ``lean-toolchain`` set to the toolchain the tag names (``fyan.lean.mathlib.pair_for``). The
   project's own ``lean/`` and ``fyan.toml`` are not touched;
2. **fetch** there (``fyan.lakepackage.fetch.ensure_fetched``). A failure changes nothing of the
   project; the staged folder stays, so the next ``fyan upgrade`` resumes the fetch;
3. **re-check** every complete unit with the completion gate on the new pair, from its recorded,
   hash-checked artifacts, as ``fyan verify`` does (``fyan.gates.verify.verify_project``), the
   staged package standing in for the project's;
4. **switch** — the previous pair (``lakefile.toml``, ``lean-toolchain``, manifest, the fetched
   ``.lake/packages``) moves to ``.fyan/upgrade/previous/``, the staged one into ``lean/``, and
   ``fyan.toml``'s ``[lean] toolchain`` and ``mathlib`` name the new pair; each unit whose
   completion did not reproduce is reopened through the gateway (``Gateway.reopen``, the only
   writer of state) with the gate's reason, and leaves the package. Nothing is deleted: the
   previous pair is removed only when every unit reproduced (the new pair verified); otherwise it
   stays for going back.
"""

from __future__ import annotations

import os
import re
import shutil
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from fyan.errors import FyanError, UsageError
from fyan.lakepackage.fetch import FetchProgress, ensure_fetched
from fyan.lean.mathlib import Pair, pair_for
from fyan.project import Project, ProjectPaths

#: the package files that make a pair (configuration and what Lake fetched for it)
PAIR_FILES = ("lakefile.toml", "lean-toolchain", "lake-manifest.json")


@dataclass(frozen=True)
class _StagedPaths(ProjectPaths):
    """The project's paths with its Lake package replaced by the staged one."""

    staged: Path = Path()

    @cached_property
    def lean(self) -> Path:
        return self.staged


@dataclass
class UpgradeReport:
    """What ``upgrade`` did: the pairs, the fetch, each complete unit's re-check, the units
    reopened (unit → reason) and where the previous pair is kept (None: removed)."""

    previous: tuple[str, str]
    new: Pair
    fetched: list[str] = field(default_factory=list)
    checked: dict[str, bool] = field(default_factory=dict)
    reopened: dict[str, str] = field(default_factory=dict)
    kept: str | None = None

    def text(self) -> str:
        old_tag, old_pin = self.previous
        lines = [f"Upgraded from Mathlib {old_tag or '(none)'} / {old_pin} to Mathlib {self.new.mathlib} / "
                 f"{self.new.toolchain}" + (f" (fetched: {'; '.join(self.fetched)})" if self.fetched else "")]
        ok = [u for u, passed in self.checked.items() if passed]
        lines.append(f"Re-checked {len(self.checked)} complete unit(s) on the new pair: {len(ok)} reproduce")
        for unit, reason in self.reopened.items():
            lines.append(f"  reopened {unit}: {reason}")
        lines.append(f"The previous pair is kept in {self.kept} (every reopened unit is proved again on the new one)"
                     if self.kept else "The previous pair was removed: every complete unit reproduces on the new one")
        return "\n".join(lines)


def set_require_rev(lakefile: str, tag: str) -> str:
    """``lakefile.toml`` text with the ``rev`` of its ``[[require]]`` named ``mathlib`` set to
    ``tag`` (added when the table has none; the table added when there is none)."""
    from fyan.lean.mathlib import require_block

    blocks = re.split(r"(?m)^(?=\[)", lakefile)
    for i, block in enumerate(blocks):
        if block.startswith("[[require]]") and re.search(r'(?m)^name[ \t]*=[ \t]*"mathlib"[ \t]*$', block):
            if re.search(r"(?m)^rev[ \t]*=", block):
                blocks[i] = re.sub(r"(?m)^rev[ \t]*=.*$", lambda m: f'rev = "{tag}"', block)
            else:
                blocks[i] = block.rstrip("\n") + f'\nrev = "{tag}"\n'
            return "".join(blocks)
    return lakefile.rstrip("\n") + "\n" + require_block(tag)


def set_lean_keys(toml: str, values: dict[str, str]) -> str:
    """``fyan.toml`` text with the ``[lean]`` keys of ``values`` set (strings), everything else
    kept as written (comments included); a ``[lean]`` section is added when there is none
    (``fyan.configfile.set_keys``: written as data, so any value reads back as given). Raises
    ``ValueError`` when the text is not TOML."""
    from fyan.configfile import set_keys

    return set_keys(toml, "lean", values)


def _stage(project: Project, pair: Pair) -> Path:
    """``.fyan/upgrade/<tag>/``: the project's package configuration for ``pair`` (kept between
    attempts: what a fetch left there is resumed)."""
    staged = project.paths.state / "upgrade" / pair.mathlib
    staged.mkdir(parents=True, exist_ok=True)
    src = project.paths.lean
    for item in src.iterdir():
        if item.name in (".lake", "lake-manifest.json", *PAIR_FILES):
            continue
        dest = staged / item.name
        if item.is_dir() and not item.is_symlink():
            shutil.copytree(item, dest, dirs_exist_ok=True, symlinks=True)
        elif item.is_file():
            shutil.copy2(item, dest)
    lakefile = (src / "lakefile.toml").read_text(encoding="utf-8")
    (staged / "lakefile.toml").write_text(set_require_rev(lakefile, pair.mathlib), encoding="utf-8")
    (staged / "lean-toolchain").write_text(pair.toolchain + "\n", encoding="utf-8")
    return staged


def _move(src: Path, dest: Path) -> None:
    if not src.exists() and not src.is_symlink():
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists() or dest.is_symlink():
        shutil.rmtree(dest) if dest.is_dir() and not dest.is_symlink() else dest.unlink()
    os.replace(src, dest)


def upgrade(project: Project, tag: str, *, progress: FetchProgress | None = None) -> UpgradeReport:
    """Move ``project`` to Mathlib ``tag`` (module docstring). Raises ``UsageError`` for a
    revision that is no release tag or the pair the project already has, ``FetchError`` when
    the fetch fails (nothing of the project changed), ``ProjectError``/``LockedError`` when the
    project is not ingested or another run holds it, ``FyanError`` without a toolchain."""
    from fyan.gates.verify import verify_project
    from fyan.lakepackage.package import sync_package
    from fyan.lean.toolchain import TOOLCHAIN_MISSING, discover
    from fyan.orchestrator.lock import ProjectLock
    from fyan.state.gateway import Gateway
    from fyan.state.models import UnitStatus
    from fyan.state.store import Store

    try:
        pair = pair_for(tag)
    except ValueError as e:
        raise UsageError(str(e)) from None
    cfg = project.config.lean
    if (cfg.mathlib, cfg.toolchain) == (pair.mathlib, pair.toolchain):
        raise UsageError(f"the project is already on Mathlib {pair.mathlib} with {pair.toolchain}",
                         hint="`fyan verify` re-checks every complete unit on it")
    lock = ProjectLock(project.paths.lock)
    lock.acquire()
    try:
        staged = _stage(project, pair)
        # [lean] extra_imports stays: a unit's recorded file is Fyan's rendering with the imports it
        # had, so adding `import Mathlib` to a core project would make every complete unit differ
        new_config = project.config.model_copy(update={"lean": cfg.model_copy(update={
            "mathlib": pair.mathlib, "toolchain": pair.toolchain})})
        view = Project(project.paths.root, new_config)
        object.__setattr__(view, "paths", _StagedPaths(project.paths.root, staged))
        disc = discover(new_config.lean, cwd=staged)
        if disc.toolchain is None:
            raise FyanError(f"cannot upgrade without the toolchain {pair.toolchain}: {disc.problem or TOOLCHAIN_MISSING}",
                            hint=f"install it (elan toolchain install {pair.toolchain}), then run the same command")
        report = UpgradeReport((cfg.mathlib, cfg.toolchain), pair)
        fetch = ensure_fetched(staged, disc.toolchain, staged / ".fyan-fetch", progress=progress,
                               command=f"fyan upgrade {project.paths.root} --mathlib {pair.mathlib}")
        report.fetched = ["lake " + " ".join(s.command) for s in fetch.steps]
        store = Store(project.paths.db)
        try:
            verification = verify_project(view, store, discovery=disc)
        finally:
            store.close()
        report.checked = {u.unit: u.reproduced for u in verification.units}
        # switch: the previous pair aside, the new one in place, the configuration naming it
        previous = project.paths.state / "upgrade" / "previous"
        if previous.exists():
            shutil.rmtree(previous)
        lean = project.paths.lean
        for name in PAIR_FILES:
            _move(lean / name, previous / name)
        _move(lean / ".lake" / "packages", previous / ".lake" / "packages")
        for name in PAIR_FILES:
            _move(staged / name, lean / name)
        _move(staged / ".lake" / "packages", lean / ".lake" / "packages")
        (project.paths.state / "fetched.json").unlink(missing_ok=True)
        config_text = project.paths.config.read_text(encoding="utf-8")
        new_text = set_lean_keys(config_text, {"toolchain": pair.toolchain, "mathlib": pair.mathlib})
        tomllib.loads(new_text)  # what is written parses (a ValueError here is a bug, before anything is written)
        project.paths.config.write_text(new_text, encoding="utf-8")
        moved = Project.open(project.paths.root)
        ensure_fetched(lean, disc.toolchain, moved.paths.state, progress=FetchProgress(enabled=False))  # records it
        gateway = Gateway(moved)
        try:
            for entry in verification.not_reproduced:
                reason = (f"does not reproduce on Mathlib {pair.mathlib} / {pair.toolchain} (fyan upgrade from "
                          f"{cfg.mathlib or 'no Mathlib'} / {cfg.toolchain}): {entry.reason}")
                gateway.reopen(entry.unit, reason, moved.config.scheduler.attempts_per_stage,
                               evidence={"failing_checks": entry.failing_checks, "log_dir": entry.log_dir})
                report.reopened[entry.unit] = reason
            views = gateway.store.views(moved.config.scheduler.attempts_per_stage)
            complete = [v.unit for v in views.values() if v.status is UnitStatus.COMPLETE]
            sync_package(moved, gateway.store, complete=complete)
        finally:
            gateway.close()
        shutil.rmtree(staged, ignore_errors=True)
        if report.reopened:
            report.kept = moved.paths.rel(previous)
        else:
            shutil.rmtree(previous, ignore_errors=True)
        return report
    finally:
        lock.release()
