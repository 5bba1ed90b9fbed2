"""A reader of the ``.olean`` files real Lean writes (for the core tier only: Fyan itself never
reads ``.olean`` files, its trusted inspector does).

An ``.olean`` is a compacted region of Lean objects (src/runtime/compact.cpp): a header (``olean``,
a version byte, the Lean version, the githash), the base address it was written for at 0x50, the
root object's address at 0x58, then objects with absolute pointers. The root is ``ModuleData``
(src/Lean/Environment.lean): object fields ``imports``, ``constNames``, ``constants``,
``extraConstNames``, ``entries``, then the scalar ``isModule``. ``.olean.server``/``.olean.private``
parts point into the ``.olean``'s region: load them together."""

from __future__ import annotations

import struct
from pathlib import Path

STRING, ARRAY, SCALAR_ARRAY, MAX_CTOR = 249, 246, 248, 244


def load(*paths: Path) -> list:
    """The root object of each file, decoded: ``("ctor", tag, fields, scalars)``, ``str``,
    ``list`` or ``("box", n)``."""
    regions = []
    for path in paths:
        b = Path(path).read_bytes()
        if b[:5] != b"olean":
            raise ValueError(f"{path} is not an .olean file")
        regions.append((struct.unpack_from("<Q", b, 0x50)[0], b, struct.unpack_from("<Q", b, 0x58)[0]))
    cache: dict[int, object] = {}

    def at(p: int) -> tuple[bytes, int]:
        for base, b, _ in regions:
            if base <= p < base + len(b):
                return b, p - base
        raise ValueError(f"pointer {p:#x} outside the loaded regions")

    def obj(p: int):
        if p & 1:
            return ("box", p >> 1)
        if p in cache:
            return cache[p]
        b, off = at(p)
        _rc, size, other, tag = struct.unpack_from("<iHBB", b, off)
        if tag == STRING:
            n = struct.unpack_from("<Q", b, off + 8)[0]
            r: object = b[off + 32: off + 32 + n - 1].decode()
        elif tag == ARRAY:
            n = struct.unpack_from("<Q", b, off + 8)[0]
            r = [obj(struct.unpack_from("<Q", b, off + 24 + 8 * i)[0]) for i in range(n)]
        elif tag < MAX_CTOR:
            r = ("ctor", tag, [obj(struct.unpack_from("<Q", b, off + 8 + 8 * i)[0]) for i in range(other)],
                 b[off + 8 + 8 * other: off + size])
        else:
            r = ("other", tag)
        cache[p] = r
        return r

    return [obj(root) for _, _, root in regions]


def name(o) -> str:
    """A ``Lean.Name`` as text (``Name.str`` is constructor 1, ``Name.num`` 2)."""
    if o == ("box", 0):
        return ""
    _, tag, fields, _ = o
    prefix = name(fields[0])
    last = fields[1] if tag == 1 else str(fields[1][1] if fields[1][0] == "box" else fields[1])
    return f"{prefix}.{last}" if prefix else last


def module_data(path: Path) -> dict:
    """``constNames``, ``isModule`` and the extension entry counts of one ``.olean``."""
    root = load(path)[0]
    _, _, fields, scalars = root
    return {"is_module": bool(scalars[0]), "constants": [name(n) for n in fields[1]],
            "extensions": {name(e[2][0]): len(e[2][1]) for e in fields[4]}}
