"""Fetch the dashboard's vendored JavaScript again from the npm registry and check it.

The dashboard's dependency graph is drawn with cytoscape and its dagre layout, and the unit
page's math with KaTeX, shipped in
``fyan/dashboard/static/vendor/`` (see the README there: versions, tarball integrity, licences).
This script runs ``npm pack`` (the registry's ordinary client) for each pinned package, checks
the tarball's sha512 integrity against the pinned value, and compares the shipped files with
the tarball's. ``--write`` replaces the shipped files (after a deliberate version change,
update ``PINS`` and the README).

    python scripts/vendor_dashboard_js.py           # check: prints one line per file, exit 1 on a difference
    python scripts/vendor_dashboard_js.py --write   # refresh the shipped copies
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VENDOR = Path(__file__).resolve().parents[1] / "fyan" / "dashboard" / "static" / "vendor"

#: package@version -> (tarball sha512 integrity, {path in the tarball: shipped file name})
PINS = {
    "cytoscape@3.35.0": (
        "sha512-sMvBIXiGMnhkCaWz2R06FwF/27MNlS+Tqvi17foO9UhnUg3XGZccKjxsvEqQFAQYMSSZmN5SxYzUYlQ0DOJJ3g==",
        {"package/dist/cytoscape.min.js": "cytoscape.min.js", "package/LICENSE": "cytoscape.LICENSE"},
    ),
    "cytoscape-dagre@4.0.1": (
        "sha512-hyNdh8Vp1nwzBcjHnM4c71G81bFhPmQYLXD2HM9AZIvl+8TrMzWEOPW45hF/XOBQiEguPcDQzi6VrXR1XBcXOA==",
        {"package/dist/cytoscape-dagre.min.js": "cytoscape-dagre.min.js", "package/LICENSE": "cytoscape-dagre.LICENSE"},
    ),
    # the unit page's statement math (TeX rendered in the browser); only the woff2 fonts, which
    # every browser the dashboard supports loads first (the CSS lists woff and ttf after them)
    "katex@0.16.22": (
        "sha512-XCHRdUw4lf3SKBaJe4EvgqIuWwkPSo9XoeO8GjQW94Bp7TWv9hNhzZjZ+OH9yf1UmLygb7DIT5GSFQiyt16zYg==",
        {"package/dist/katex.min.js": "katex/katex.min.js", "package/dist/katex.min.css": "katex/katex.min.css",
         "package/dist/contrib/auto-render.min.js": "katex/auto-render.min.js", "package/LICENSE": "katex/LICENSE",
         "package/dist/fonts/KaTeX_AMS-Regular.woff2": "katex/fonts/KaTeX_AMS-Regular.woff2",
         "package/dist/fonts/KaTeX_Caligraphic-Bold.woff2": "katex/fonts/KaTeX_Caligraphic-Bold.woff2",
         "package/dist/fonts/KaTeX_Caligraphic-Regular.woff2": "katex/fonts/KaTeX_Caligraphic-Regular.woff2",
         "package/dist/fonts/KaTeX_Fraktur-Bold.woff2": "katex/fonts/KaTeX_Fraktur-Bold.woff2",
         "package/dist/fonts/KaTeX_Fraktur-Regular.woff2": "katex/fonts/KaTeX_Fraktur-Regular.woff2",
         "package/dist/fonts/KaTeX_Main-Bold.woff2": "katex/fonts/KaTeX_Main-Bold.woff2",
         "package/dist/fonts/KaTeX_Main-BoldItalic.woff2": "katex/fonts/KaTeX_Main-BoldItalic.woff2",
         "package/dist/fonts/KaTeX_Main-Italic.woff2": "katex/fonts/KaTeX_Main-Italic.woff2",
         "package/dist/fonts/KaTeX_Main-Regular.woff2": "katex/fonts/KaTeX_Main-Regular.woff2",
         "package/dist/fonts/KaTeX_Math-BoldItalic.woff2": "katex/fonts/KaTeX_Math-BoldItalic.woff2",
         "package/dist/fonts/KaTeX_Math-Italic.woff2": "katex/fonts/KaTeX_Math-Italic.woff2",
         "package/dist/fonts/KaTeX_SansSerif-Bold.woff2": "katex/fonts/KaTeX_SansSerif-Bold.woff2",
         "package/dist/fonts/KaTeX_SansSerif-Italic.woff2": "katex/fonts/KaTeX_SansSerif-Italic.woff2",
         "package/dist/fonts/KaTeX_SansSerif-Regular.woff2": "katex/fonts/KaTeX_SansSerif-Regular.woff2",
         "package/dist/fonts/KaTeX_Script-Regular.woff2": "katex/fonts/KaTeX_Script-Regular.woff2",
         "package/dist/fonts/KaTeX_Size1-Regular.woff2": "katex/fonts/KaTeX_Size1-Regular.woff2",
         "package/dist/fonts/KaTeX_Size2-Regular.woff2": "katex/fonts/KaTeX_Size2-Regular.woff2",
         "package/dist/fonts/KaTeX_Size3-Regular.woff2": "katex/fonts/KaTeX_Size3-Regular.woff2",
         "package/dist/fonts/KaTeX_Size4-Regular.woff2": "katex/fonts/KaTeX_Size4-Regular.woff2",
         "package/dist/fonts/KaTeX_Typewriter-Regular.woff2": "katex/fonts/KaTeX_Typewriter-Regular.woff2",
         },
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the shipped files with the registry's")
    args = parser.parse_args()
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for spec, (integrity, files) in PINS.items():
            out = subprocess.run(["npm", "pack", spec, "--silent"], cwd=tmp, capture_output=True, text=True, check=True)
            tarball = Path(tmp) / out.stdout.strip().splitlines()[-1]
            digest = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
            if digest != integrity:
                print(f"{spec}: tarball integrity {digest} != pinned {integrity}")
                bad += 1
                continue
            with tarfile.open(tarball) as tar:
                for member, name in files.items():
                    data = tar.extractfile(member).read()  # type: ignore[union-attr]
                    shipped = VENDOR / name
                    same = shipped.is_file() and shipped.read_bytes() == data
                    if args.write and not same:
                        shipped.parent.mkdir(parents=True, exist_ok=True)
                        shipped.write_bytes(data)
                    print(f"{name}: {'same as' if same else ('written from' if args.write else 'DIFFERS from')} {spec}")
                    bad += 0 if same or args.write else 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
