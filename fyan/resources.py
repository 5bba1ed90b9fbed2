"""Locate the data folders shipped with Fyan: ``prompts/``, ``config/``, ``lake-template/``.

In a source checkout (``pip install -e .``) they are the top-level folders of the repository;
in a wheel they are packaged under ``fyan/_data/`` (see ``pyproject.toml``).
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder ``name`` (``"prompts"``, ``"config"`` or ``"lake-template"``).

    Raises ``FileNotFoundError`` naming both places looked at when neither exists.
    """
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"Fyan data folder {name!r} not found in {_PACKAGE / '_data'} or {_PACKAGE.parent}; "
        "reinstall Fyan (pip install -e .)"
    )
