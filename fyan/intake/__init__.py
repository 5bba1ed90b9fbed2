"""Intake: read a source document into a statement catalogue with provenance.

``read_source`` picks the reader from the file's content and suffix. Every reader returns a
``Catalogue`` (see ``catalogue.py``) and raises ``InputError`` with ``file:line`` on bad input.
"""

from __future__ import annotations

from pathlib import Path

from fyan.errors import InputError
from fyan.intake.catalogue import Catalogue


def read_source(path: Path, *, source_root: Path | None = None) -> Catalogue:
    """Read the document at ``path`` (TeX) into a ``Catalogue``.

    ``source_root`` is the folder provenance paths are relative to (default: the file's
    folder). Raises ``InputError`` for a missing or unreadable file, a format Fyan does not
    read, or malformed content.
    """
    if not path.exists():
        raise InputError(f"{path}: source file not found", hint="check the path given to --source")
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give the main document file")
    head = path.read_bytes()[:5]
    if head.startswith(b"%PDF-") or path.suffix.lower() == ".pdf":
        raise InputError(
            f"{path}: PDF sources are not supported by this version of Fyan",
            hint="give the TeX source of the document",
        )
    if path.suffix.lower() in {".md", ".markdown"}:
        raise InputError(
            f"{path}: Markdown sources are not supported by this version of Fyan",
            hint="give the TeX source of the document",
        )
    from fyan.intake.tex import read_tex

    return read_tex(path, source_root=source_root)
