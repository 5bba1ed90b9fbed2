"""Writing ``fyan.toml`` as data, never as text: ``fyan init`` makes it, ``fyan adopt`` and ``fyan
upgrade`` change keys in it.

Every value goes through tomlkit, which quotes and escapes it as TOML requires (a quote, a
backslash, a newline or a control character in a project name, a path or a command reads back as
written), and keeps what a person wrote around the keys it changes: comments, order, blank lines.
Reading stays with ``fyan.config`` (``tomllib`` through pydantic-settings).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import tomlkit
from tomlkit.items import Table
from tomlkit.toml_document import TOMLDocument

#: One section ``fyan init`` writes: its dotted name, its comment lines (written first inside it),
#: and its keys in order.
Section = tuple[str, Iterable[str], Mapping[str, Any]]


def _table(doc: TOMLDocument, dotted: str) -> Table:
    """The table ``dotted`` (``agents.default``) of ``doc``, created (as a super table for the
    outer parts, so that ``[agents.default]`` is written without an empty ``[agents]``) when
    missing. Raises ``ValueError`` when a part of the name holds a value that is not a table."""
    node: Any = doc
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if part not in node:
            node.append(part, tomlkit.table(is_super_table=i < len(parts) - 1))
        node = node[part]
        if not isinstance(node, Table):
            raise ValueError(f"[{'.'.join(parts[:i + 1])}] in fyan.toml is not a table")
    return node


def document(header: Iterable[str], sections: Iterable[Section]) -> str:
    """A new ``fyan.toml``: the ``header`` comment lines, then each section (comment lines, keys);
    a section with neither is left out."""
    doc = tomlkit.document()
    for line in header:
        doc.add(tomlkit.comment(line))
    for name, comments, values in sections:
        comments = list(comments)
        if not comments and not values:
            continue
        doc.add(tomlkit.nl())
        table = _table(doc, name)
        for line in comments:
            table.add(tomlkit.comment(line))
        for key, value in values.items():
            table.add(key, value)
    return tomlkit.dumps(doc)


def set_keys(text: str, table: str, values: Mapping[str, Any]) -> str:
    """``text`` (a ``fyan.toml``) with the keys of ``values`` set in ``[table]``, the table added at
    the end when there is none; everything else kept as written. Raises ``ValueError`` when
    ``text`` is not TOML (``tomlkit.exceptions.ParseError`` is one)."""
    doc = tomlkit.parse(text)
    if table not in doc:
        doc.add(tomlkit.nl())
    target = _table(doc, table)
    for key, value in values.items():
        target[key] = value
    return tomlkit.dumps(doc)
