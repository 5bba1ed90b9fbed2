"""Keep the ``file:line`` references of ``docs/lean-contract.md`` true.

Each row names where Fyan relies on a Lean or Lake behaviour as ``path:LINE `symbol` `` (the
symbol a reader looks for on that line). ``python scripts/contract_lines.py`` prints every
reference whose line no longer holds its symbol; ``--fix`` rewrites the line numbers to where the
symbol is now (its first definition or assignment in the file, else its first occurrence).
``tests/test_lean_contract.py`` fails while any reference is stale.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "docs" / "lean-contract.md"
#: `path:LINE` `symbol`
REF = re.compile(r"`(?P<path>(?:fyan|lake-template|tests|scripts)/[\w./-]+):(?P<line>\d+)` `(?P<symbol>[^`]+)`")


def locate(path: Path, symbol: str) -> int | None:
    """The line (1-based) of ``symbol``'s definition in ``path`` (``def``/``class``/assignment, a
    Lean ``def``/``structure``), else of its first occurrence; None when absent."""
    lines = path.read_text(encoding="utf-8").splitlines()
    name = re.escape(symbol.split("(")[0].strip())
    definition = re.compile(rf"^\s*(?:async\s+)?(?:def|class|partial def|structure|abbrev|theorem)\s+{name}\b|"
                            rf"^\s*{name}\s*(?::[^=]*)?=")
    for i, line in enumerate(lines, start=1):
        if definition.search(line):
            return i
    for i, line in enumerate(lines, start=1):
        if symbol in line:
            return i
    return None


def check(text: str) -> list[tuple[str, int, str, int | None]]:
    """Every stale reference: (path, line written, symbol, line now or None)."""
    out = []
    for m in REF.finditer(text):
        path = ROOT / m.group("path")
        symbol = m.group("symbol")
        written = int(m.group("line"))
        if not path.is_file():
            out.append((m.group("path"), written, symbol, None))
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        here = lines[written - 1] if 0 < written <= len(lines) else ""
        if symbol.split("(")[0].strip() not in here:
            out.append((m.group("path"), written, symbol, locate(path, symbol)))
    return out


def fix(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        path = ROOT / m.group("path")
        if not path.is_file():
            return m.group(0)
        lines = path.read_text(encoding="utf-8").splitlines()
        written = int(m.group("line"))
        symbol = m.group("symbol")
        if 0 < written <= len(lines) and symbol.split("(")[0].strip() in lines[written - 1]:
            return m.group(0)
        now = locate(path, symbol)
        return m.group(0) if now is None else f"`{m.group('path')}:{now}` `{symbol}`"

    return REF.sub(repl, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fix", action="store_true", help="rewrite stale line numbers in place")
    args = parser.parse_args(argv)
    text = CONTRACT.read_text(encoding="utf-8")
    if args.fix:
        CONTRACT.write_text(fix(text), encoding="utf-8")
        text = CONTRACT.read_text(encoding="utf-8")
    stale = check(text)
    for path, line, symbol, now in stale:
        print(f"{path}:{line} `{symbol}`: " + (f"now at line {now}" if now else "not found in the file"))
    print(f"{len(REF.findall(text))} references, {len(stale)} stale")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
