"""The existing declarations a plan names, looked up before the plan is accepted; a name that
does not exist is dropped, so it never reaches a later prompt.

A lemma-DAG node names existing declarations in two places: ``cites`` (the lemmas its proof will
use) and, for a definition node, ``library`` (the library definition it is). A model may make
names up. Before the plan is accepted, code — never a model — looks every such name up in the
unit's environment, and ``lemma_names.json`` (derived by the plan check) records what it found,
what it dropped and why, and which source answered (``method``):

* ``warm`` — with a toolchain: ``lean_lookup`` (``fyan.prover.tools``: Fyan's probe ``#check
  <name>`` after the unit's own header and preamble, so a name resolves as in the unit, through
  the namespaces it opens) on a warm ``lean --server`` of the process's pool
  (``fyan.lakepackage.pool``), with the search path and confinement a prove check uses. Lean prints a
  found constant's signature with its full name (``elabCheckCore``: ``.signature c`` for an
  identifier that ``realizeGlobalConstWithInfos`` resolves), and only an answer whose full name is
  the name given (or ends with it) counts as found: anything else (a projection, a term) is not a
  declaration. A warm answer decides only what a prompt mentions; the completion gate never uses
  a warm server, and a proof citing a name that does not exist fails there anyway.
* ``lean`` — with a toolchain but no warm server (``[lean] warm_servers = 0``, the pool full, the
  server did not start or answer): the trusted inspector on a cold build of the upstream units
  (``fyan.lakepackage.names.check_names``).
* ``index`` / ``upstream`` — without a toolchain: the declarations the upstream units published
  (their ``Basic.lean``, passed by the gate) and froze, and, when there is one for the project's
  toolchain pin and dependency set (``fyan.prover.environment.declaration_key``), the declaration
  index (``fyan.prover.search``; method ``index``). Without an index a library name cannot be
  confirmed and is dropped (method ``upstream``).

When the environment cannot be consulted at all, every name is dropped with that reason: a name
nobody confirmed never reaches a prompt. Structural mistakes (``library`` on a theorem node, a
node citing a node of the same DAG) are form errors and refuse the plan
(``form_problem``).
"""

from __future__ import annotations

import re
from pathlib import Path


from fyan.audit.citations import CitationCheck, cited
from fyan.models.replies import LemmaDag
from fyan.lean import declarations

def form_problem(dag: LemmaDag) -> str | None:
    """Why the DAG's citations are malformed (refused, not dropped), or None."""
    theorems = [n.name for n in dag.nodes if n.library and n.kind == "theorem"]
    if theorems:
        return (f"lemma DAG gives `library` for theorem node(s) {theorems}: it names the library definition a "
                "definition node is; a theorem's existing lemmas go in `cites`")
    nodes = {n.name for n in dag.nodes}
    clash = [c for c in cited(dag) if c in nodes]
    if clash:
        return f"lemma DAG cites its own node(s) {clash}: list them in `uses`"
    return None


def full_name(signature: str | None, name: str) -> str | None:
    """The declaration's full name from Lean's ``#check`` signature when it denotes ``name``
    (equal, or ``name`` qualified by an open namespace), else None. Universe parameters
    (``Nat.rec.{u}``) are not part of the name."""
    if not signature:
        return None
    head = re.sub(r"\.\{.*$", "", signature.split(None, 1)[0])
    bare = name.removeprefix("_root_.")
    return head if head == bare or (head.endswith("." + bare) and not name.startswith("_root_.")) else None


def look_up(project, store, unit, names: list[str], *, log_dir: Path) -> CitationCheck:
    """Look ``names`` up for ``unit`` (module docstring: warm server, else inspector, else the
    upstream declarations and the index); missing names are dropped with the reason."""
    from fyan.lean.toolchain import discover

    names = list(dict.fromkeys(names))
    disc = discover(project.config.lean)
    if disc.toolchain is None:
        return _offline(project, store, unit, names)
    check, why = _warm(project, store, unit, names, log_dir)
    if check is None:
        from fyan.lakepackage.names import check_names

        cold = check_names(project, store, unit, names, log_dir=log_dir, discovery=disc)
        problem = "; ".join(p for p in (f"no warm language server ({why})", cold.problem) if p)
        check = CitationCheck(method="lean", found=dict(cold.found), missing=list(cold.missing), problem=problem)
        for n in check.missing:
            check.dropped[n] = (f"the environment could not be consulted: {cold.problem}" if cold.problem
                                else "not found in the compiled environment (trusted inspector)")
    return check


def _warm(project, store, unit, names: list[str], log_dir: Path) -> tuple[CitationCheck | None, str]:
    """``lean_lookup`` of each name on the pool's warm server of the unit: (the check, "") or
    (None, why no warm server answered)."""
    from fyan.lakepackage import pool
    from fyan.prover.mcp_server import unit_config
    from fyan.prover.models import Limits
    from fyan.prover.tools import ProverTools

    cfg = project.config.lean
    if cfg.warm_servers <= 0:
        return None, "[lean] warm_servers = 0"
    try:
        config = unit_config(project, store, unit)
    except ValueError as e:
        return None, str(e)
    shared = pool.configure(cfg)
    key = pool.ServerKey(config.lean, config.githash, tuple(config.search_path), config.header,
                         tuple((k, v) for k, v in config.options))
    spec = pool.ServerSpec(scratch=config.scratch / key.digest(), extra_env=dict(config.extra_env),
                           readable=tuple(config.readable), hidden=tuple(config.hidden), sandbox=config.sandbox,
                           memory_mb=cfg.memory_limit_mb, timeout_s=cfg.build_timeout)
    tools = ProverTools(config.header, lambda: shared.lease(key, spec, unit=unit.id), log=log_dir / "names-lookup.jsonl",
                        limits=Limits(timeout_s=min(120.0, float(cfg.build_timeout))), preamble=config.preamble,
                        postamble=config.postamble)
    return lookup_with(tools, names)


def lookup_with(tools, names: list[str]) -> tuple[CitationCheck | None, str]:
    """``lean_lookup`` of each name with ``tools`` (a ``fyan.prover.tools.ProverTools``): (the
    check, "") or (None, why) when Lean did not answer a lookup (not available, crashed, timed
    out): then nothing of this source counts."""
    from fyan.prover.models import LookupInput

    check = CitationCheck(method="warm")
    for n in names:
        r = tools.lean_lookup(LookupInput(name=n))
        if r.status != "ok":
            return None, f"{r.status}: {r.note}"
        full = full_name(r.signature, n) if r.exists else None
        if full is None:
            check.missing.append(n)
            check.dropped[n] = ("Lean's answer names another thing (a projection or a term, not a declaration)"
                                if r.exists else f"not found in the unit's environment ({r.note or 'Lean: unknown'})")
        else:
            check.found[n] = full
            check.signatures[full] = r.signature or ""
    return check, ""


def _offline(project, store, unit, names: list[str]) -> CitationCheck:
    """Without a toolchain: the upstream units' published and frozen declarations, and the
    declaration index of the project's pin and dependency set when there is one."""
    from fyan.lakepackage.names import candidates
    from fyan.lakepackage.package import unit_namespace, upstream
    from fyan.prover.environment import declaration_key
    from fyan.prover.search import DeclarationIndex, IndexError_

    deps = upstream(store, unit.id)
    spaces = [unit_namespace(project, unit)] + [unit_namespace(project, d) for d in deps]
    known: set[str] = set()
    for dep in deps:
        path = project.paths.unit(dep.id) / "Basic.lean"
        if path.is_file():
            known |= {d.full_name for d in declarations.scan(path.read_text(encoding="utf-8")) if d.full_name}
        known |= {f.decl for f in store.freezes(dep.id)}
    index = None
    problem = None
    path = project.paths.state / "declarations.sqlite"
    if path.is_file():
        try:
            index = DeclarationIndex(path, expect=declaration_key(project))
        except (IndexError_, ValueError) as e:
            problem = f"the declaration index was not used: {e}"
    else:
        problem = "no declaration index (library names cannot be confirmed)"
    check = CitationCheck(method="index" if index is not None else "upstream", problem=problem)
    try:
        for n in names:
            hit = next((c for c in candidates(n, spaces) if c in known), None)
            if hit is None and index is not None:
                found = next((h for c in candidates(n, spaces) if (h := index.lookup(c)) is not None), None)
                if found is not None:
                    hit = found.name
                    check.signatures[hit] = found.signature
            if hit is None:
                check.missing.append(n)
                check.dropped[n] = "not found " + check.describe()
            else:
                check.found[n] = hit
    finally:
        if index is not None:
            index.close()
    return check


def plan_citations(project, store, unit, dag: LemmaDag, log_dir: Path) -> tuple[CitationCheck | None, str | None]:
    """The plan check's part for citations: (the lookup, or None when nothing is cited; a form
    problem that refuses the plan, or None). Missing names do not refuse it: they are dropped."""
    problem = form_problem(dag)
    if problem is not None:
        return None, problem
    names = cited(dag)
    if not names:
        return None, None
    return look_up(project, store, unit, names, log_dir=log_dir), None
