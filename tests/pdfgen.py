"""Write small PDFs for tests (no binary fixtures in the repository).

``make_pdf`` builds a valid PDF with a text layer from lines of (font, x, y, text), where font
is ``"R"`` (Helvetica, the body font), ``"B"`` (Helvetica-Bold, for headings) or ``"I"``
(Helvetica-Oblique, the italic of amsthm's theorem statements); a line may hold several runs
[(font, text), ...] to mix fonts. ``blank_pdf`` has pages with no text. ``latex_pdf`` builds a
PDF with the real ``pdflatex`` from TeX written by the test (``needs_pdflatex`` skips where it is
missing; CI installs Debian's texlive-latex-recommended).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

needs_pdflatex = pytest.mark.skipif(shutil.which("pdflatex") is None,
                                    reason="pdflatex is not installed (Debian: texlive-latex-recommended)")

Run = tuple[str, str]
FONTS = {"R": 1, "B": 2, "I": 3}
Line = tuple[float, float, list[Run]]  # x, y, runs


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[list[Line]], size: tuple[int, int] = (612, 792)) -> bytes:
    objects: list[bytes] = []
    n_pages = len(pages)
    # 1 catalog, 2 pages, 3 font R, 4 font B, 5 font I, then (page, content) pairs
    kids = " ".join(f"{6 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    for base in ("Helvetica", "Helvetica-Bold", "Helvetica-Oblique"):
        objects.append(f"<< /Type /Font /Subtype /Type1 /BaseFont /{base} /Encoding /WinAnsiEncoding >>".encode())
    for i, lines in enumerate(pages):
        ops = []
        for x, y, runs in lines:
            parts = [f"BT {x} {y} Td"]
            for font, text in runs:
                parts.append(f"/F{FONTS[font]} 11 Tf ({_escape(text)}) Tj")
            parts.append("ET")
            ops.append(" ".join(parts))
        stream = "\n".join(ops).encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {size[0]} {size[1]}] "
            f"/Resources << /Font << /F1 3 0 R /F2 4 0 R /F3 5 0 R >> >> /Contents {7 + 2 * i} 0 R >>".encode()
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def text_page(lines: list, top: float = 740, step: float = 14, x: float = 72) -> list[Line]:
    """A page from simple lines: a str is a body line; a pair (heading, rest) is a line whose
    heading is bold; a list [(font, text), ...] gives the runs ("B" bold, "R" regular)
    explicitly; "" leaves a paragraph gap (one extra step)."""
    out: list[Line] = []
    y = top
    for line in lines:
        if line == "":
            y -= step
            continue
        if isinstance(line, list):
            out.append((x, y, line))
        elif isinstance(line, tuple):
            head, rest = line
            out.append((x, y, [("B", head), ("R", rest)]))
        else:
            out.append((x, y, [("R", line)]))
        y -= step
    return out


def write_pdf(path: Path, pages: list[list[Line]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(make_pdf(pages))
    return path


def blank_pdf(path: Path, pages: int = 2) -> Path:
    return write_pdf(path, [[] for _ in range(pages)])


def latex_pdf(directory: Path, tex: str, name: str = "doc") -> Path:
    """``directory/name.pdf`` typeset by pdflatex from the TeX text ``tex`` (run twice, so
    references and float placement settle). Raises AssertionError with the end of the log when
    LaTeX stops with an error."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.tex").write_text(tex, encoding="utf-8")
    for _ in range(2):
        run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape",
                              f"{name}.tex"], cwd=directory, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout[-3000:]
    return directory / f"{name}.pdf"
