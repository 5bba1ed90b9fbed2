"""Intake: read a source document into a statement catalogue with provenance.

``read_source`` picks the reader from the file's content and suffix: a file starting with
``%PDF-`` (or named ``*.pdf``) is read by ``fyan.intake.pdf``, ``*.md``/``*.markdown`` by
``fyan.intake.markdown``, anything else as TeX by ``fyan.intake.tex`` (which follows the
``\\input`` tree). Every reader returns a ``Catalogue`` (see ``catalogue.py``) and raises
``InputError`` with ``file:line`` (or the PDF page) on bad input.
"""

from __future__ import annotations

from pathlib import Path

from fyan.errors import InputError
from fyan.intake.catalogue import Catalogue

from fyan.config import IntakeSection

#: Default size limit of one source file, MiB (``[intake] max_file_mib``).
DEFAULT_MAX_FILE_MIB: float = IntakeSection.model_fields["max_file_mib"].default

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdown", ".mkd"})
#: suffixes of TeX files: any other file that is not a PDF or Markdown is read as TeX, and says so
TEX_SUFFIXES = frozenset({".tex", ".ltx", ".latex"})


def read_as(path: Path) -> str | None:
    """How a main file whose name does not say its format is read (``notes.txt``, ``paper``):
    a sentence for the user, or None for ``.tex``, PDF and Markdown files."""
    if path.suffix.lower() in TEX_SUFFIXES or source_format(path) != "tex":
        return None
    named = f"a {path.suffix} file" if path.suffix else "a file with no suffix"
    return (f"{path.name} is read as TeX ({named}; only .pdf and .md/.markdown name another reader): its statements "
            "are theorem-like LaTeX environments (\\begin{theorem}) or, without any, paragraphs under printed "
            "headings (\"Theorem 2.1.\", \"Lemma 3 (Name).\"); rename it .md to read it as Markdown")


def check_size(path: Path, shown: str, max_file_mib: float) -> None:
    """Raise ``InputError`` when ``path`` is larger than ``max_file_mib`` MiB (checked from the
    file system, before anything is read)."""
    size = path.stat().st_size
    if size > max_file_mib * 1024 * 1024:
        raise InputError(
            f"{shown}: {size / 1024 / 1024:.1f} MiB is larger than the {max_file_mib:g} MiB limit for one source file",
            hint="split the document, or raise [intake] max_file_mib in fyan.toml "
            "(FYAN_INTAKE__MAX_FILE_MIB for `fyan init`)",
        )


def source_format(path: Path) -> str:
    """``"pdf"``, ``"markdown"`` or ``"tex"`` for the file at ``path`` (content first, then suffix)."""
    with path.open("rb") as f:
        head = f.read(1024)
    if b"%PDF-" in head or path.suffix.lower() == ".pdf":
        return "pdf"
    if path.suffix.lower() in MARKDOWN_SUFFIXES:
        return "markdown"
    return "tex"


def main_file_candidates(folder: Path, limit: int = 5) -> list[Path]:
    """Files of ``folder`` (and its subfolders, nearest first) that look like a document's main
    file: TeX with ``\\documentclass``, then Markdown and PDF files. At most ``limit``; only the
    first 64 KiB of a TeX file is read, and at most 2,000 files are looked at."""
    import itertools

    files = sorted(itertools.islice((f for f in folder.rglob("*") if f.is_file()), 2000),
                   key=lambda f: (len(f.relative_to(folder).parts), str(f)))
    tex = []
    for f in files:
        if f.suffix.lower() in (".tex", ".ltx"):
            try:
                with f.open("rb") as fh:
                    head = fh.read(65536)
            except OSError:
                continue
            if b"\\documentclass" in head:
                tex.append(f)
    other = [f for f in files if f.suffix.lower() in MARKDOWN_SUFFIXES or f.suffix.lower() == ".pdf"]
    return (tex + other)[:limit]


def main_file_hint(folder: Path) -> str:
    """What to give ``--source`` instead of ``folder``: its likely main files, or how to find one."""
    found = main_file_candidates(folder)
    if found:
        return "give one of its files, e.g. --source " + ", ".join(str(f) for f in found)
    return (f"no .tex file with \\documentclass, .md or .pdf file is in {folder}: give the path of the document's main "
            "file (the one LaTeX compiles)")


def read_source(path: Path, *, source_root: Path | None = None,
                max_file_mib: float = DEFAULT_MAX_FILE_MIB, tolerant: bool = False,
                origin: Path | None = None) -> Catalogue:
    """Read the document at ``path`` (TeX, PDF or Markdown) into a ``Catalogue``.

    ``source_root`` is the folder provenance paths are relative to (default: the file's
    folder); ``max_file_mib`` bounds every file read (MiB); ``tolerant`` (``[intake]
    tolerant``) makes malformed math and malformed LaTeX environments (TeX, and Markdown with
    LaTeX in it) a warning each instead of an error; ``origin``: the folder ``source_root`` was
    copied from (``[intake] source_origin``: a TeX include's absolute path below it is read from the
    copy). Raises ``InputError`` for a
    missing, unreadable, empty, oversized or malformed file.
    """
    if not path.exists():
        raise InputError(f"{path}: source file not found", hint="check the path given to --source")
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give the main document file", hint=main_file_hint(path))
    check_size(path, str(path), max_file_mib)
    if path.stat().st_size == 0:
        raise InputError(f"{path}: the file is empty", hint="give the main file of the document")
    fmt = source_format(path)
    if fmt == "pdf":
        from fyan.intake.pdf import read_pdf

        return read_pdf(path, source_root=source_root)
    if fmt == "markdown":
        from fyan.intake.markdown import read_markdown

        return read_markdown(path, source_root=source_root, tolerant=tolerant)
    from fyan.intake.catalogue import IntakeWarning
    from fyan.intake.tex import read_tex

    how = read_as(path)
    try:
        catalogue = read_tex(path, source_root=source_root, max_file_mib=max_file_mib, tolerant=tolerant,
                             origin=origin, boundary=source_root if origin is not None else None)
    except InputError as e:
        if how:
            e.hint = how + (f"; {e.hint}" if e.hint else "")
        raise
    if how:
        catalogue.warnings.insert(0, IntakeWarning(code="read-as", where="", message=how))
    return catalogue
