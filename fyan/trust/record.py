"""Which toolchains the completion gate trusts: those whose ``fyan selftest`` passed.

A selftest result is kept in the user's data folder, one JSON file per Lean version:
``<data>/selftest/<lean version>.json`` where ``<data>`` is ``$FYAN_DATA_DIR`` when set, else
``platformdirs.user_data_dir("fyan")`` (``~/.local/share/fyan`` on Linux). It records the
toolchain (``lake --version``), the Fyan version, the inspector (source SHA-256 and executable
SHA-256), the corpus SHA-256, the date and every case's verdict.

``toolchain_trust`` is the one place the gate asks "may this toolchain complete units?": yes when
the record for the toolchain's Lean version passed for this Fyan version, this inspector source
and this corpus, run by this very toolchain (the same ``lake --version`` line: another build of
the same Lean version, a fork's or a patched one, has not passed it); yes, stated as unproven,
when ``[lean] trust_without_selftest = true``; else no, with the command to run. The Lean
version (``4.31.0`` of ``Lake version … (Lean version 4.31.0)``) is the key: it is what a pin
names (``fyan.lean.toolchain.pin_version``).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fyan.config import LeanSection
from fyan.lean.toolchain import Toolchain

FORMAT = "fyan-selftest/1"


def data_root(env: dict[str, str] | None = None) -> Path:
    """``$FYAN_DATA_DIR``, else ``platformdirs.user_data_dir("fyan")``."""
    env = env if env is not None else dict(os.environ)
    if env.get("FYAN_DATA_DIR"):
        return Path(env["FYAN_DATA_DIR"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("fyan", appauthor=False))


def toolchain_key(toolchain: Toolchain) -> str:
    """The Lean version of ``toolchain`` (else its whole version line), as a file-name slug."""
    return re.sub(r"[^A-Za-z0-9.\-]+", "-", toolchain.lean_version or toolchain.version).strip("-") or "unknown"


def record_path(key: str) -> Path:
    return data_root() / "selftest" / f"{key}.json"


def save_record(record: dict[str, Any]) -> Path:
    """Write ``record`` (``fyan.selftest.run.SelftestResult.record``) for its ``key``, atomically;
    returns the path. Raises ``OSError`` when the data folder cannot be written."""
    path = record_path(record["key"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def load_record(key: str) -> dict[str, Any] | None:
    """The kept record for ``key``, or None when there is none or it is unreadable."""
    try:
        data = json.loads(record_path(key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def all_records() -> list[dict[str, Any]]:
    """Every kept record, by key (for ``fyan doctor``)."""
    folder = data_root() / "selftest"
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        rec = load_record(path.stem)
        if rec is not None:
            out.append(rec)
    return out


def current_identity() -> dict[str, str]:
    """What a record must match to be valid now: Fyan's version, the inspector's source SHA-256
    and the corpus SHA-256."""
    from fyan import __version__
    from fyan.lean.inspector import source_digest
    from fyan.trust.corpus import corpus_digest

    return {"fyan_version": __version__, "inspector_source_sha256": source_digest(), "corpus_sha256": corpus_digest()}


def record_problem(record: dict[str, Any] | None, key: str, identity: dict[str, str] | None = None) -> str | None:
    """Why ``record`` does not make Lean ``key`` trusted now, or None when it does."""
    if record is None:
        return f"Lean {key} has never passed `fyan selftest` here"
    if not record.get("passed"):
        failed = [c["id"] for c in record.get("cases", []) if not c.get("ok")]
        return (f"`fyan selftest` failed for Lean {key} on {record.get('date', '?')}"
                + (f" ({', '.join(failed[:5])}{' …' if len(failed) > 5 else ''} not as intended)" if failed else ""))
    identity = identity or current_identity()
    changed = [what for what, field in (("Fyan version", "fyan_version"), ("inspector", "inspector_source_sha256"),
                                        ("cheat corpus", "corpus_sha256")) if record.get(field) != identity[field]]
    if changed:
        return (f"the selftest of Lean {key} ({record.get('date', '?')}) was for another {' and '.join(changed)} "
                f"than this Fyan's")
    return None


@dataclass(frozen=True)
class Trust:
    """``trusted``: the gate may mark units complete with this toolchain; ``statement``: what every
    gate report says about it; ``problem``: why not (with the command to run), when not."""

    trusted: bool
    statement: str
    problem: str | None = None
    #: False when trusted only because ``[lean] trust_without_selftest`` says so: no selftest record
    #: vouches for the toolchain, so nothing showed that its honest controls pass the policy
    proven: bool = True


def toolchain_trust(toolchain: Toolchain, config: LeanSection) -> Trust:
    """Whether the gate trusts ``toolchain`` (module docstring). Never raises."""
    key = toolchain_key(toolchain)
    try:
        problem = record_problem(load_record(key), key)
    except (OSError, ValueError) as e:  # the corpus or the inspector source is unreadable
        problem = f"the selftest record of Lean {key} cannot be checked: {e}"
    if problem is None and (load_record(key) or {}).get("toolchain") != toolchain.version:
        problem = (f"the selftest of Lean {key} ran on another toolchain ({(load_record(key) or {}).get('toolchain')!r}) "
                   f"than this one ({toolchain.version!r})")
    if problem is None:
        rec = load_record(key) or {}
        return Trust(True, f"proven: `fyan selftest` passed for Lean {key} on {rec.get('date', '?')}")
    if config.trust_without_selftest:
        return Trust(True, f"NOT PROVEN: {problem}; trusted anyway because [lean] trust_without_selftest = true",
                     proven=False)
    pin = config.toolchain
    return Trust(False, f"refused: {problem}",
                 f"the gate does not trust this toolchain yet: {problem}; run `fyan selftest --toolchain {pin}` "
                 "(it proves the gate rejects every known cheat with this toolchain), or set [lean] "
                 "trust_without_selftest = true in fyan.toml to trust it unproven")


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
