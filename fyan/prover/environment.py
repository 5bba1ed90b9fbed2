"""The declaration list of a toolchain and dependency set: its key, and where it is cached.

The declaration search (``fyan.prover.search``) and the plan's name lookup without a toolchain
(``fyan.gates.citations``) read an index built from a ``fyan-declarations/1`` list, which the
trusted inspector writes once per toolchain and dependency set. Both must never read an index
of another set as this one's, so the list and its index carry a key:

* ``toolchain`` — the project's pin, the first line of ``lean/lean-toolchain`` as elan reads it
  (``fyan.lean.toolchain.read_pin``), e.g. ``leanprover/lean4:v4.35.0``;
* ``dependencies`` — ``sha256:`` of the canonical JSON of the Lake manifest's packages (each
  package's ``name``, ``type``, ``url``/``dir``, ``rev``, ``inputRev``, ``scope``, in order of
  name), or ``none`` when the package requires nothing (no ``lean/lake-manifest.json``).

``DeclarationIndex(path, expect=declaration_key(project))`` refuses an index whose header names
another key.

**The list comes from the trusted inspector** (``fyan-inspector --declarations FILE``,
``lake-template/inspector/FyanInspector.lean`` ``declarationLines``): every non-internal
constant of the environment its ``--import`` modules load, one JSON line each (name, kind,
module, signature), after a first line ``{format, nonce, count}``. ``read_inspector_list``
reads it strictly — the nonce this run gave, the count, every record a ``DeclarationRecord`` —
so a truncated or forged file is refused, never half-read. ``ensure_index`` keeps one list per
key in the inspector's cache (``cache_root``/``declarations/<digest of the key>/``) and builds
the project's index (``.fyan/declarations.sqlite``) from it; the inspector runs only when that
key has no list yet.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from fyan.prover.search import (DeclarationIndex, DeclarationList, DeclarationRecord, IndexError_, build_index,
                                write_declarations)

#: the first line's format of the inspector's raw list
RAW_FORMAT = "fyan-inspector-declarations/1"

#: the fields of a manifest package that determine what it provides
PACKAGE_FIELDS = ("name", "type", "url", "dir", "rev", "inputRev", "scope", "subDir")


def dependency_digest(manifest: Path) -> str:
    """The ``dependencies`` key of a Lake manifest (module docstring). Raises ``ValueError`` for
    a manifest that is not JSON with a ``packages`` list."""
    if not manifest.is_file():
        return "none"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        packages = data["packages"]
        if not isinstance(packages, list):
            raise TypeError("packages is not a list")
        rows = sorted(({k: p.get(k) for k in PACKAGE_FIELDS if p.get(k) is not None} for p in packages),
                      key=lambda r: str(r.get("name")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{manifest} is not a Lake manifest Fyan can read: {e}") from None
    canon = json.dumps(rows, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canon.encode("utf-8")).hexdigest()


def declaration_key(project) -> tuple[str, str]:
    """(toolchain, dependencies) of ``project``'s Lake package (module docstring). Raises
    ``ValueError`` when the package pins no toolchain or its manifest is unreadable."""
    from fyan.lean.toolchain import read_pin

    pin = read_pin(project.paths.lean)
    if pin is None:
        raise ValueError(f"{project.paths.lean / 'lean-toolchain'} pins no toolchain")
    return pin, dependency_digest(project.paths.lean / "lake-manifest.json")


def read_inspector_list(path: Path, nonce: str) -> list[DeclarationRecord]:
    """The records of the inspector's raw list at ``path`` (module docstring). Raises
    ``IndexError_`` naming the line for a missing file, another format or nonce, a count that
    does not match, or a record that does not validate."""
    try:
        fh = open(path, encoding="utf-8")
    except OSError as e:
        raise IndexError_(f"the inspector wrote no declaration list ({path}): {e}") from None
    with fh:
        try:
            head = json.loads(fh.readline())
        except ValueError as e:
            raise IndexError_(f"{path}: line 1 is not the inspector's header: {e}") from None
        if not isinstance(head, dict) or head.get("format") != RAW_FORMAT:
            raise IndexError_(f"{path}: line 1 is not a {RAW_FORMAT} header")
        if head.get("nonce") != nonce:
            raise IndexError_(f"{path}: the list does not echo this run's nonce: refused (not this run's answer)")
        records = []
        for n, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            try:
                records.append(DeclarationRecord.model_validate_json(line))
            except ValueError as e:
                raise IndexError_(f"{path}: line {n}: {e}") from None
    if head.get("count") != len(records):
        raise IndexError_(f"{path}: the header says {head.get('count')} declarations, the file has {len(records)} "
                          "(truncated?)")
    return records


def key_digest(key: tuple[str, str]) -> str:
    return hashlib.sha256(json.dumps(list(key)).encode("utf-8")).hexdigest()[:32]


def ensure_index(project, cache: Path, produce: Callable[[Path, str], None]) -> tuple[DeclarationList, bool]:
    """The project's declaration index for its current key (``declaration_key``), built from the
    cached list of that key, or first from a new list: ``produce(path, nonce)`` runs the trusted
    inspector with ``--declarations path --nonce nonce`` (it raises on failure). Returns (the
    header, whether the inspector ran). ``cache``: the inspector's cache root. Raises
    ``ValueError``/``IndexError_`` with the reason."""
    import secrets

    key = declaration_key(project)
    folder = cache / "declarations" / key_digest(key)
    listed = folder / "declarations.jsonl"
    index = project.paths.state / "declarations.sqlite"
    ran = False
    if not listed.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        nonce = secrets.token_hex(16)
        raw = folder / f"raw-{nonce}.jsonl"
        try:
            produce(raw, nonce)
            records = read_inspector_list(raw, nonce)
        finally:
            raw.unlink(missing_ok=True)
        tmp = folder / f"declarations-{nonce}.jsonl"
        write_declarations(tmp, DeclarationList(toolchain=key[0], dependencies=key[1], count=len(records)), records)
        os.replace(tmp, listed)
        ran = True
    try:
        current = DeclarationIndex(index, expect=key)
        header = current.header
        current.close()
        if not ran:
            return header, False
    except IndexError_:
        pass
    return build_index(listed, index), ran


def library_imports(project) -> list[str]:
    """The modules of the project's library environment, which the index lists: Lean core
    (``Init``) and ``[lean] extra_imports`` (e.g. ``Mathlib``), the library modules every unit
    imports (as the name check and the gate import them: ``fyan.lakepackage.names``)."""
    return list(dict.fromkeys(["Init", *project.config.lean.extra_imports]))


def inspector_producer(project, toolchain, log_dir: Path) -> Callable[[Path, str], None]:
    """A ``produce`` for ``ensure_index``: the trusted inspector of the project's pin
    (``fyan.lean.inspector.ensure_inspector``), run confined under ``lake env`` in the project's
    Lake package (its fetched dependencies on the search path) on ``library_imports``, with
    ``--declarations`` inside its out folder (``log_dir/declarations``). Raises ``IndexError_``
    with the reason: a pin that does not match ``toolchain``, no inspector, a failed run."""
    from fyan.lean.inspector import ensure_inspector, inspector_confinement, run_inspector
    from fyan.lean.toolchain import check_pin
    from fyan.sandbox.runner import Confinement

    cfg = project.config.lean
    package = project.paths.lean

    def produce(path: Path, nonce: str) -> None:
        pin = check_pin(toolchain, package)
        if not pin.ok:
            raise IndexError_(f"the declaration index needs the project's pinned toolchain: {pin.reason}")
        build, why = ensure_inspector(toolchain, pin.pin or "", cfg, log_dir)
        if build is None:
            raise IndexError_(f"no trusted inspector: {why}")
        out_dir = log_dir / "declarations"
        listed = out_dir / "declarations.jsonl"
        base = inspector_confinement(build, toolchain, package, config=cfg, out_dir=out_dir)
        confinement = Confinement(writable=(out_dir, package / ".lake"),
                                  read_only=tuple(dict.fromkeys((*base.read_only, package.resolve()))))
        try:
            result = run_inspector(build, toolchain, package, config=cfg, out_dir=out_dir, name="declarations",
                                   imports=library_imports(project), declarations=listed, nonce=nonce,
                                   confinement=confinement)
            if not result.ok:
                raise IndexError_(f"the trusted inspector could not list the declarations: {result.problem} "
                                  f"(log {out_dir / 'declarations.log'})")
            os.replace(listed, path)
        finally:
            listed.unlink(missing_ok=True)

    return produce


def project_index(project, log_dir: Path, *, toolchain=None) -> tuple[str, str, DeclarationList | None]:
    """Ensure the project's declaration index of its current key (``ensure_index`` with
    ``inspector_producer``): (``built`` | ``reused`` | ``skipped``, why, the header or None).
    ``skipped`` names the reason (no toolchain, no pin, the inspector failed). ``toolchain``:
    the discovered one (default: ``fyan.lean.toolchain.discover``). Never raises."""
    from fyan.lean.inspector import cache_root
    from fyan.lean.toolchain import TOOLCHAIN_MISSING, discover

    if toolchain is None:
        toolchain = discover(project.config.lean).toolchain
    if toolchain is None:
        return "skipped", TOOLCHAIN_MISSING, None
    try:
        header, ran = ensure_index(project, cache_root(project.config.lean),
                                   inspector_producer(project, toolchain, log_dir))
    except (ValueError, IndexError_, OSError) as e:
        return "skipped", str(e), None
    return ("built" if ran else "reused"), f"{header.count} declarations of {header.toolchain}", header


def current_index(project) -> Path | None:
    """``.fyan/declarations.sqlite`` when it holds the index of the project's current key, else
    None (absent, another key, unreadable)."""
    path = project.paths.state / "declarations.sqlite"
    if not path.is_file():
        return None
    try:
        DeclarationIndex(path, expect=declaration_key(project)).close()
    except (ValueError, IndexError_, OSError):
        return None
    return path
