"""``search_declarations``: words or a type pattern → ranked declarations, from an SQLite FTS5
index (the standard library's ``sqlite3``; ranking is FTS5's built-in ``bm25``).

**The declaration list** (``DeclarationList``, format ``fyan-declarations/1``) is what the
trusted inspector writes once per toolchain and dependency set: a JSON-lines file whose first
line is the header (format, toolchain, a digest of the dependency set, the record count) and
each further line one ``DeclarationRecord`` (name, kind, module, signature as Lean prints it,
docstring or null). ``read_declarations`` reads it strictly: a bad line is an error naming
the line, never skipped.

**The index** (``build_index``) is one SQLite file holding an FTS5 table ``decls`` with the columns
``name`` (the dotted name), ``words`` (the name split at dots, underscores and case changes:
``MeasureTheory.integral_add`` → ``Measure Theory integral add``), ``signature`` (``signature_tokens``:
its operators spelled as words, since FTS5's ``unicode61`` tokenizer drops punctuation, and
its one-letter variables dropped: ``a + b = b + a`` → ``plus eq plus``) and
``docstring``; ``module`` and ``kind`` are stored, not indexed. Two contentless FTS5 tables
with the same rowids index parts of it again: ``names`` (``name``, ``words``) and ``sigs``
(``signature``). A term's postings cover every column of its table, and a column filter only
skips them while reading: a name query for ``le`` in one table would read every signature with
a ``≤`` too, and one for ``is`` every docstring with the word. Split, a query reads the postings
of the columns it asks about. The header is kept in a ``meta`` table (with ``schema``,
``SCHEMA``) so an index built for another toolchain or dependency set, or by an older Fyan, is
never read as this one's.

**A query** (``search``) is words (``integral add``) or a type pattern (anything with an
operator: ``a + b = b + a``, ``_ ≤ _ → _``), each term quoted as an FTS5 string (no query
syntax of the caller's reaches FTS5). Words are matched in the name, its words and the
docstring: all of them (AND), then, when that finds fewer than ``limit`` rows, all but one of
them (each way, for three to six words) and last any of them (OR), in the name and its words
(an OR of common words reads every row that has one: it comes last, when the narrower
queries found too few).
Words are first matched in the name alone (a name match is what a prover
looks for, and it is a short list), English stopwords dropped. A pattern is matched in the
signature: all its adjacent token pairs (``_ * _ = _ * _`` is ``times0eq eq0times``: the
pattern's shape through short posting lists, where a phrase over operators most signatures
contain would read them all), then all its tokens anywhere in it. Ranking is ``bm25`` with column weights ``WEIGHTS`` (a name match counts more
than a signature match, which counts more than a docstring match).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import BaseModel, Field

FORMAT = "fyan-declarations/1"
#: the index's table layout (module docstring); an index of another layout is rebuilt
SCHEMA = "2"
#: bm25 weights of the indexed columns name, words, signature, docstring
WEIGHTS = (10.0, 6.0, 2.0, 1.0)

SYMBOLS = {
    "+": "plus", "-": "minus", "*": "times", "/": "div", "%": "mod", "^": "pow", "=": "eq", "≠": "ne", "≤": "le",
    "<": "lt", "≥": "ge", ">": "gt", "∣": "dvd", "∀": "forall", "∃": "exists", "→": "imp", "↔": "iff", "¬": "not",
    "∧": "and", "∨": "or", "∈": "mem", "∉": "notmem", "⊆": "subset", "⊂": "ssubset", "∩": "inter", "∪": "union",
    "∑": "sum", "∏": "prod", "⁻¹": "inv", "•": "smul", "∘": "comp", "×": "prodtype", "ℕ": "nat", "ℤ": "int",
    "ℚ": "rat", "ℝ": "real", "ℂ": "complex", "∫": "integral", "‖": "norm", "√": "sqrt", "∅": "empty", "⊤": "top",
    "⊥": "bot", "⁅": "bracket", "⊗": "tensor", "≃": "equiv", "≅": "iso", "↑": "coe",
}
#: words a word query drops (unless it has nothing else): they match most docstrings
STOPWORDS = frozenset("a an and are as at be by for from in is it its of on or that the this to with".split())
_SYMBOL_RE = re.compile("|".join(re.escape(s) for s in sorted(SYMBOLS, key=len, reverse=True)))
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_TOKEN_RE = re.compile(r"\w+")


class DeclarationRecord(BaseModel):
    """One declaration of the environment: ``name`` (fully qualified), ``kind`` (``theorem``,
    ``def``, ``axiom``, ``inductive``, ``structure``, ``instance``, ``opaque``, ...), the
    ``module`` declaring it, its ``signature`` as Lean prints it (``name binders : type``) and
    its ``docstring`` (None: none)."""

    model_config = {"extra": "forbid"}

    name: str = Field(min_length=1)
    kind: str
    module: str
    signature: str
    docstring: str | None = None


class DeclarationList(BaseModel):
    """The header line of a declaration list."""

    model_config = {"extra": "forbid"}

    format: str = FORMAT
    toolchain: str
    #: a digest of the dependency set (the Lake manifest's packages and revisions)
    dependencies: str
    count: int


class Hit(BaseModel):
    name: str
    kind: str
    module: str
    signature: str
    docstring: str | None = None
    #: FTS5 bm25 rank (lower is better)
    rank: float


class SearchResult(BaseModel):
    status: str = "ok"
    note: str = ""
    query: str
    pattern: bool = False
    hits: list[Hit] = Field(default_factory=list)


class IndexError_(Exception):
    """The declaration list or the index is unusable; the message says why."""


def name_words(name: str) -> str:
    """The name split at dots, underscores and case changes."""
    return " ".join(_CAMEL_RE.sub(" ", part) for part in re.split(r"[._'«»]+", name) if part)


def symbol_words(text: str) -> str:
    """``text`` with each operator of ``SYMBOLS`` spelled as its word (spaces around)."""
    return _SYMBOL_RE.sub(lambda m: f" {SYMBOLS[m.group(0)]} ", text)


def signature_tokens(text: str) -> str:
    """The tokens of a signature or a type pattern: its words with operators spelled
    (``symbol_words``), lower-cased, without one-letter variables and ``_`` holes
    (``a + b = b + a`` → ``plus eq plus``; ``Finset.sum_comm`` keeps ``finset sum comm``)."""
    return " ".join(t.lower() for t in _TOKEN_RE.findall(symbol_words(text))
                    if t.strip("_") and (len(t) > 1 or t.isdigit()))


def _pairs(tokens: list[str]) -> list[str]:
    """Adjacent pairs as single tokens (``plus eq`` → ``plus0eq``): a pattern's shape matched
    through short posting lists instead of a phrase over operators most signatures contain."""
    return [f"{a}0{b}" for a, b in zip(tokens, tokens[1:])]


def indexed_signature(signature: str) -> str:
    """What is indexed of a signature: its ``signature_tokens`` and their adjacent pairs."""
    tokens = signature_tokens(signature).split()
    return " ".join(tokens + _pairs(tokens))


def write_declarations(path: Path, header: DeclarationList, records: Iterable[DeclarationRecord]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(header.model_dump_json() + "\n")
        for r in records:
            fh.write(r.model_dump_json(exclude_none=True) + "\n")


def read_declarations(path: Path) -> tuple[DeclarationList, Iterator[DeclarationRecord]]:
    """The header and an iterator over the records. Raises ``IndexError_`` naming the bad line."""
    fh = open(path, encoding="utf-8")
    try:
        header = DeclarationList.model_validate_json(fh.readline())
    except ValueError as e:
        fh.close()
        raise IndexError_(f"{path}: line 1 is not a {FORMAT} header: {e}") from None
    if header.format != FORMAT:
        fh.close()
        raise IndexError_(f"{path}: format {header.format!r}, expected {FORMAT!r}")

    def records() -> Iterator[DeclarationRecord]:
        with fh:
            for n, line in enumerate(fh, start=2):
                if not line.strip():
                    continue
                try:
                    yield DeclarationRecord.model_validate_json(line)
                except ValueError as e:
                    raise IndexError_(f"{path}: line {n}: {e}") from None

    return header, records()


def build_index(declarations: Path, index: Path, *, batch: int = 5000) -> DeclarationList:
    """Build the FTS5 index file ``index`` from the declaration list ``declarations`` (written
    to a temporary file, then renamed: a reader never sees half an index). Returns the header."""
    _refuse_foreign_target(index)
    header, records = read_declarations(declarations)
    tmp = index.with_name(index.name + ".tmp")
    tmp.unlink(missing_ok=True)
    db = sqlite3.connect(tmp)
    try:
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        tokenize = "tokenize = 'unicode61 remove_diacritics 2'"
        db.execute("CREATE VIRTUAL TABLE decls USING fts5(name, words, docstring, module UNINDEXED, "
                   f"kind UNINDEXED, shown UNINDEXED, doc UNINDEXED, {tokenize})")
        db.execute(f"CREATE VIRTUAL TABLE names USING fts5(name, words, content='', {tokenize})")
        db.execute(f"CREATE VIRTUAL TABLE sigs USING fts5(signature, content='', {tokenize})")
        rows: list[tuple] = []
        count = 0

        def flush() -> None:
            db.executemany("INSERT INTO decls(rowid, name, words, docstring, module, kind, shown, doc) "
                           "VALUES (?,?,?,?,?,?,?,?)", [row[:3] + row[4:] for row in rows])
            db.executemany("INSERT INTO names(rowid, name, words) VALUES (?,?,?)", [row[:3] for row in rows])
            db.executemany("INSERT INTO sigs(rowid, signature) VALUES (?,?)", [(row[0], row[3]) for row in rows])
            rows.clear()

        for r in records:
            count += 1
            rows.append((count, r.name, name_words(r.name), indexed_signature(r.signature), r.docstring or "", r.module,
                         r.kind, r.signature, r.docstring))
            if len(rows) >= batch:
                flush()
        flush()
        if count != header.count:
            raise IndexError_(f"{declarations}: the header says {header.count} declarations, the file has {count}")
        for table in ("decls", "names", "sigs"):
            db.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        db.execute("INSERT INTO meta VALUES ('header', ?)", (header.model_dump_json(),))
        db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA,))
        db.commit()
    finally:
        db.close()
    tmp.replace(index)
    return header


def _refuse_foreign_target(index: Path) -> None:
    """Building replaces ``index`` whole: refuse (``IndexError_``) when something is there that is
    not a declaration index — a link, a folder, or another database such as a project's state
    store — so a misconfigured index path can never overwrite Fyan's state."""
    if not (index.exists() or index.is_symlink()):
        return
    if index.is_symlink() or not index.is_file():
        raise IndexError_(f"{index} exists and is not a declaration index (a link or a folder): it is never replaced")
    try:
        db = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
        try:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        finally:
            db.close()
    except sqlite3.DatabaseError:
        tables = set()
    own = {t for t in tables if t in ("decls", "meta", "names", "sigs")
           or t.startswith(("decls_", "names_", "sigs_", "sqlite_"))}  # FTS5's shadow tables
    if not {"decls", "meta"} <= tables or tables - own:
        raise IndexError_(f"{index} exists and is not a declaration index: it is never replaced (remove it, or "
                          "choose another index path)")


class DeclarationIndex:
    """A built index, opened read-only. ``expect``: the toolchain and dependency digest the
    caller needs; an index of another set raises ``IndexError_``."""

    def __init__(self, index: Path, *, expect: tuple[str, str] | None = None) -> None:
        if not index.is_file():
            raise IndexError_(f"no declaration index at {index}")
        self.db = sqlite3.connect(f"file:{index}?mode=ro", uri=True, check_same_thread=False)
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key = 'header'").fetchone()
        except sqlite3.DatabaseError as e:
            raise IndexError_(f"{index} is not a declaration index: {e}") from None
        self.header = DeclarationList.model_validate_json(row[0])
        schema = self.db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if schema is None or schema[0] != SCHEMA:
            raise IndexError_(f"{index} was built by another version of Fyan (index layout "
                              f"{schema[0] if schema else 1}, this one reads {SCHEMA}): build it again")
        if expect is not None and (self.header.toolchain, self.header.dependencies) != expect:
            raise IndexError_(f"{index} was built for {self.header.toolchain} / {self.header.dependencies}, "
                              f"not {expect[0]} / {expect[1]}")

    def close(self) -> None:
        self.db.close()

    def module_of(self, name: str) -> str | None:
        row = self.db.execute("SELECT module FROM decls WHERE name MATCH ? AND name = ? LIMIT 1",
                              (_quote(name), name)).fetchone()
        return row[0] if row else None

    def lookup(self, name: str) -> Hit | None:
        """The declaration named exactly ``name`` (its record, rank 0), or None."""
        row = self.db.execute("SELECT name, kind, module, shown, doc FROM decls WHERE name MATCH ? AND name = ? LIMIT 1",
                              (_quote(name), name)).fetchone()
        if row is None:
            return None
        return Hit(name=row[0], kind=row[1], module=row[2], signature=row[3], docstring=row[4], rank=0.0)

    def search(self, query: str, *, limit: int = 10) -> SearchResult:
        """Ranked declarations for words or a type pattern (module docstring)."""
        limit = max(1, min(limit, 100))
        pattern = bool(_SYMBOL_RE.search(query))
        result = SearchResult(query=query, pattern=pattern)
        attempts: list[tuple[str, str]] = []  # (table, FTS5 query)
        if pattern:  # the pattern's adjacent pairs of operators and names, then its tokens
            terms = signature_tokens(query).split()[:16]
            pairs = list(dict.fromkeys(_pairs(terms)))
            attempts = ([("sigs", " AND ".join(map(_quote, pairs)))] if pairs else []) + \
                [("sigs", " AND ".join(map(_quote, dict.fromkeys(terms))))]
        else:  # words: in the name first, then with the docstring (all of them), then any of them in the name
            terms = list(dict.fromkeys(t.lower() for t in _TOKEN_RE.findall(query) if t.strip("_")))[:16]
            terms = [t for t in terms if t not in STOPWORDS] or terms
            attempts = [("names", " AND ".join(map(_quote, terms))), ("decls", " AND ".join(map(_quote, terms)))]
            if 2 < len(terms) <= 6:  # all but one of them (each way), before any of them
                attempts += [("names", " AND ".join(_quote(t) for t in terms if t != left)) for left in terms]
            if len(terms) > 1:
                attempts.append(("names", " OR ".join(map(_quote, terms))))
        if not terms:
            result.status, result.note = "refused", "no words in the query"
            return result
        seen: set[str] = set()
        for table, match in attempts:
            if len(result.hits) >= limit:
                break
            ranked = self.db.execute(_RANKED[table], (match, limit)).fetchall()
            for rowid, score in ranked:
                name, kind, module, shown, doc = self.db.execute(
                    "SELECT name, kind, module, shown, doc FROM decls WHERE rowid = ?", (rowid,)).fetchone()
                if name in seen or len(result.hits) >= limit:
                    continue
                seen.add(name)
                result.hits.append(Hit(name=name, kind=kind, module=module, signature=shown, docstring=doc,
                                       rank=round(score, 4)))
        return result


#: the ranked rowids of one table's matches (bm25 with the ``WEIGHTS`` of its columns)
_RANKED = {
    "names": f"SELECT rowid, bm25(names, {WEIGHTS[0]}, {WEIGHTS[1]}) AS score FROM names WHERE names MATCH ? "
             "ORDER BY score LIMIT ?",
    "decls": f"SELECT rowid, bm25(decls, {WEIGHTS[0]}, {WEIGHTS[1]}, {WEIGHTS[3]}) AS score FROM decls "
             "WHERE decls MATCH ? ORDER BY score LIMIT ?",
    "sigs": f"SELECT rowid, bm25(sigs, {WEIGHTS[2]}) AS score FROM sigs WHERE sigs MATCH ? ORDER BY score LIMIT ?",
}


def _quote(term: str) -> str:
    """An FTS5 string literal (double quotes doubled): the term is matched, never parsed."""
    return '"' + term.replace('"', '""') + '"'
