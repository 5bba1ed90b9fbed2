#!/usr/bin/env python3
"""DAG quality of the deterministic Specifier against blueprints' ``\\uses`` ground truth.

    python scripts/dag_quality.py [BLUEPRINT ...] [--json]

Each BLUEPRINT is the main TeX file of a leanblueprint source (``content.tex``, ``web.tex`` of a
multi-file tree, or a flattened file). Without one, every blueprint of the corpus copied into
``tests/fixtures/corpus/`` is measured (flat files and multi-file trees). For each, the script

1. reads the blueprint as it is and takes its ``\\uses`` as the ground truth: the pairs of units
   (self-edges and labels of non-unit statements dropped), each a statement edge when some
   ``\\uses`` on the statement names it, else a proof edge;
2. copies the source tree to a temporary folder with every ``\\uses{...}`` removed;
3. runs intake and the deterministic edge extraction on the copy twice — references only
   (``term_edges = false``) and the default (references, nesting, defined terms and titles) —
   under intake's own acyclicity rule (``fyan.specifier.dag``: weak evidence that would close a
   cycle is kept as a mention; remaining cycles are broken as ``cycles = "break"`` does; the
   number broken is printed, since ``cycles = "error"`` would refuse the document);
4. prints precision, recall and F1 of the dependency edges found (unit pairs): all edges; the
   statement/proof split (a predicted statement edge is correct when the pair is a true edge of
   either scope, and recall of true statement edges counts a pair found in either scope: where a
   blueprint lists every ``\\uses`` on statements, references in proofs still count), with the
   agreement on scope apart; and per kind of evidence (``ref``, ``display``, ``closing``,
   ``nested``, ``title``, ``term``): edges predicted, correct, precision. Mentions (references
   kept as mentions) are counted, with how many are true edges; so are the predicted edges absent
   from ``\\uses`` but implied by its transitive closure (a blueprint rarely lists those).

Intake + edges time is printed in seconds. This is the baseline the model-assisted Specifier
must beat (docs/dependency-edges.md gives the figures).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import networkx as nx  # noqa: E402

from fyan.config import IntakeSection  # noqa: E402
from fyan.intake.tex import read_tex  # noqa: E402
from fyan.specifier.dag import extract_edges  # noqa: E402
from fyan.specifier.units import build_units  # noqa: E402

KINDS = IntakeSection().unit_kinds
_USES = re.compile(r"\\uses\s*\{[^{}]*\}")
#: The corpus blueprints (relative to the corpus folder): flat files and multi-file trees.
CORPUS_BLUEPRINTS = [
    "blueprints/pfr.content.flat.tex",
    "blueprints/pfr/blueprint/src/web.tex",
    "blueprints/dirichlet_nonvanishing/blueprint/src/content.tex",
    "blueprints/ramanujan_nagell/blueprint/src/content.tex",
    "blueprints/flt.flat.tex",
    "blueprints/sphere_packing.flat.tex",
    "blueprints/sphere_packing/blueprint/src/web.tex",
    "blueprints/equational_theories.flat.tex",
    "blueprints/brownian_motion.flat.tex",
]
EVIDENCE = ("ref", "display", "closing", "nested", "title", "term", "notation")
#: The runs: name -> (term and title edges, notation edges).
RUNS = {"references only": (False, False), "terms": (True, False), "notation": (False, True), "default": (True, True)}


def ground_truth(main: Path) -> tuple[dict[tuple[str, str], bool], int]:
    """(pair -> in proof, number of units) from the blueprint's ``\\uses``."""
    cat = read_tex(main)
    units = build_units(cat, KINDS)
    owner = {i: u.id for u in units for i in u.statements}
    truth: dict[tuple[str, str], bool] = {}
    for u in units:
        for i in u.statements:
            for r in cat.statements[i].references:
                site = cat.labels.get(r.label)
                if r.macro != "uses" or site is None or site.statement_index not in owner:
                    continue
                target = owner[site.statement_index]
                if target != u.id:
                    truth[(u.id, target)] = truth.get((u.id, target), True) and r.in_proof
    return truth, len(units)


def stripped_copy(main: Path, dest: Path) -> Path:
    """Copy the main file's folder to ``dest`` with every ``\\uses{...}`` removed from .tex files."""
    shutil.copytree(main.parent, dest, dirs_exist_ok=True)
    for path in dest.rglob("*.tex"):
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        path.write_text(_USES.sub("", text), encoding="utf-8", errors="surrogateescape")
    return dest / main.name


def predicted(main: Path, term_edges: bool, notation_edges: bool, demote: bool | None = None) -> dict:
    start = time.perf_counter()
    cat = read_tex(main)
    units = build_units(cat, KINDS)
    found = extract_edges(cat, units, unknown_references="warn", term_edges=term_edges,
                          notation_edges=notation_edges, cycles="break", demote_later_closing=demote)
    elapsed = time.perf_counter() - start
    pairs: dict[tuple[str, str], bool] = {}
    kinds: dict[str, set[tuple[str, str]]] = {k: set() for k in EVIDENCE}
    for e in found.edges:
        pairs[(e.unit, e.depends_on)] = pairs.get((e.unit, e.depends_on), True) and e.in_proof
        kinds.setdefault(e.origin, set()).add((e.unit, e.depends_on))
    mentions = {(e.unit, e.depends_on) for e in found.mentions} - set(pairs)
    broken = sum(w.code == "cycle" for w in found.warnings)
    return {"pairs": pairs, "kinds": kinds, "mentions": mentions, "broken": broken, "seconds": elapsed}


def scores(pred: set, truth: set) -> dict[str, float | int]:
    tp = len(pred & truth)
    p = tp / len(pred) if pred else 0.0
    r = tp / len(truth) if truth else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(f, 3), "predicted": len(pred),
            "truth": len(truth), "correct": tp}


def split_scores(pred: dict[tuple[str, str], bool], truth: dict[tuple[str, str], bool], in_proof: bool) -> dict:
    """One scope: precision of the predicted edges of that scope against all true pairs; recall
    of the true edges of that scope against all predicted pairs (module docstring)."""
    p_scope = {k for k, v in pred.items() if v == in_proof}
    t_scope = {k for k, v in truth.items() if v == in_proof}
    tp_p = len(p_scope & set(truth))
    tp_r = len(t_scope & set(pred))
    p = tp_p / len(p_scope) if p_scope else 0.0
    r = tp_r / len(t_scope) if t_scope else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(f, 3), "predicted": len(p_scope),
            "truth": len(t_scope), "correct": tp_p}


def measure(path: Path) -> dict:
    main_file = path.resolve()
    truth, n_units = ground_truth(main_file)
    result = {"blueprint": str(path), "units": n_units,
              "truth_edges": {"statement": sum(not v for v in truth.values()), "proof": sum(truth.values())},
              "runs": {}}
    graph = nx.DiGraph(list(truth))
    closure = {(a, b) for a in graph for b in nx.descendants(graph, a)}
    with tempfile.TemporaryDirectory(prefix="fyan-dag-quality-") as tmp:
        copy = stripped_copy(main_file, Path(tmp) / "src")
        for name, (term_edges, notation_edges) in RUNS.items():
            run = predicted(copy, term_edges, notation_edges)
            pairs = run["pairs"]
            both = [k for k in pairs if k in truth]
            result["runs"][name] = {
                "seconds": round(run["seconds"], 3),
                "all": scores(set(pairs), set(truth)),
                "statement": split_scores(pairs, truth, False),
                "proof": split_scores(pairs, truth, True),
                "scope_agreement": round(sum(pairs[k] == truth[k] for k in both) / len(both), 3) if both else None,
                "evidence": {k: {"predicted": len(v), "correct": len(v & set(truth)),
                                 "precision": round(len(v & set(truth)) / len(v), 3) if v else None}
                             for k, v in run["kinds"].items() if v},
                "mentions": {"count": len(run["mentions"]), "true_edges": len(run["mentions"] & set(truth))},
                "implied_by_truth": len({k for k in pairs if k not in truth and k in closure}),
                "cycles_broken": run["broken"],
            }
    return result


def closing_rule(path: Path) -> dict:
    """The rule "a closing-sentence reference to a later statement is a mention" measured: F1 of
    the default run with the rule and without it, and the closing references to later
    statements (how many are true edges)."""
    main_file = path.resolve()
    truth, _ = ground_truth(main_file)
    out: dict = {"blueprint": str(path)}
    with tempfile.TemporaryDirectory(prefix="fyan-dag-closing-") as tmp:
        copy = stripped_copy(main_file, Path(tmp) / "src")
        for name, demote in (("with the rule", True), ("without it", False)):
            run = predicted(copy, True, True, demote)
            out[name] = scores(set(run["pairs"]), set(truth))
        cat = read_tex(copy)
        units = build_units(cat, KINDS)
        owner = {i: u for u in units for i in u.statements}
        later = set()
        for u in units:
            for i in u.statements:
                for r in cat.statements[i].references:
                    site = cat.labels.get(r.label)
                    if r.closing and site is not None and site.statement_index in owner:
                        target = owner[site.statement_index]
                        if target.order > u.order:
                            later.add((u.id, target.id))
        out["later_closing"] = {"pairs": len(later), "true_edges": len(later & set(truth))}
    return out


def corpus_dir() -> Path:
    return ROOT / "tests" / "fixtures" / "corpus"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("blueprint", type=Path, nargs="*",
                        help="main TeX file(s) of blueprints (default: every corpus blueprint)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--closing", action="store_true",
                        help="measure the later-statement closing rule only: F1 with and without it")
    parser.add_argument("--corpus", type=Path, help="corpus folder (default: tests/fixtures/corpus)")
    args = parser.parse_args(argv)
    paths = args.blueprint or [(args.corpus or corpus_dir()) / rel for rel in CORPUS_BLUEPRINTS]
    if args.closing:
        rows = [closing_rule(p) for p in paths]
        if args.json:
            print(json.dumps(rows, indent=2))
            return 0
        for r in rows:
            a, b, c = r["with the rule"], r["without it"], r["later_closing"]
            print(f"{r['blueprint']}: F1 {a['f1']:.3f} with the rule, {b['f1']:.3f} without it "
                  f"(P {a['precision']:.3f}/{b['precision']:.3f}, R {a['recall']:.3f}/{b['recall']:.3f}); "
                  f"closing references to a later statement: {c['pairs']} pair(s), {c['true_edges']} in \\uses")
        return 0
    results = [measure(p) for p in paths]
    if args.json:
        print(json.dumps(results if len(results) > 1 else results[0], indent=2))
        return 0
    for result in results:
        t = result["truth_edges"]
        print(f"{result['blueprint']}: {result['units']} units; ground truth {t['statement']} statement + "
              f"{t['proof']} proof edges from \\uses (stripped before the run)")
        for name, run in result["runs"].items():
            print(f"  {name}: intake + edges {run['seconds']:.2f} s; {run['cycles_broken']} cycle(s) broken, "
                  f"{run['mentions']['count']} mention(s) ({run['mentions']['true_edges']} of them true edges); "
                  f"{run['implied_by_truth']} wrong edge(s) implied by the \\uses graph's transitive closure")
            for scope in ("all", "statement", "proof"):
                s = run[scope]
                print(f"    {scope:<9} P={s['precision']:.3f} R={s['recall']:.3f} F1={s['f1']:.3f} "
                      f"({s['correct']} correct of {s['predicted']} predicted, {s['truth']} true)")
            if run["scope_agreement"] is not None:
                print(f"    scope agreement on correct edges: {run['scope_agreement']:.3f}")
            print("    by evidence: " + ", ".join(
                f"{k} {v['correct']}/{v['predicted']}" for k, v in run["evidence"].items()))
    if len(results) > 1:
        print("\nsummary (all edges): blueprint, units, F1 of each run: references only, + terms and titles, "
              "+ notation, default (both); P and R of the default")
        for result in results:
            f1 = [result["runs"][name]["all"]["f1"] for name in RUNS]
            full = result["runs"]["default"]["all"]
            name = Path(result['blueprint']).name if 'flat' in result['blueprint'] else result['blueprint'].split('corpus/')[-1]
            print(f"  {name}: {result['units']} units, F1 " + " / ".join(f"{x:.3f}" for x in f1)
                  + f" (P {full['precision']:.3f}, R {full['recall']:.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
