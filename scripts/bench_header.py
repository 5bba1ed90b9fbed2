"""How fast Fyan reads Lean headers (``fyan.lean.header.read_header``).

Prints the time to read the header of a root module with N imports (Fyan's own ``<Lib>.lean``
grows by one import per complete unit; Mathlib.lean has about 7,000) and of a typical module
file. Figures only, no assertion: ``python scripts/bench_header.py [N]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fyan.lean.header import read_header  # noqa: E402


def timed(text: str, rounds: int) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        read_header(text)
    return (time.perf_counter() - start) / rounds


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    root = "-- Root module\n" + "".join(f"import Fyan.Unit{i}.Basic\n" for i in range(n))
    module = ("module\n\n/- Copyright -/\nprelude\npublic import Mathlib.Data.Real.Basic\nmeta import all Lean.Elab\n"
              "import «Odd Name».X -- why\n\n/-! # Doc -/\n" + "theorem t : True := trivial\n" * 200)
    print(f"root module, {n} imports ({len(root) // 1024} KiB): {timed(root, 3) * 1000:.1f} ms")
    print(f"module file, 3 imports and 200 declarations: {timed(module, 200) * 1e6:.1f} µs")


if __name__ == "__main__":
    main()
