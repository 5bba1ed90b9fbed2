#!/usr/bin/env python3
"""DAG quality of the deterministic Specifier against a blueprint's ``\\uses`` ground truth.

    python scripts/dag_quality.py BLUEPRINT [--json]

BLUEPRINT is the main TeX file of a leanblueprint source (``content.tex``, ``web.tex`` or a
flattened file). The script

1. reads the blueprint as it is and takes its ``\\uses`` as the ground truth: a ``\\uses{x}`` in
   a statement is a statement edge, in a proof a proof edge (only items naming another unit
   count; a label on an equation, item or sub-claim counts as its statement);
2. copies the source tree to a temporary folder with every ``\\uses{...}`` removed from the text;
3. runs intake and the deterministic edge extraction on the copy (timed, seconds), twice:
   references only (``\\ref``, ``\\cref``, ... to statement labels) and the default (references,
   nesting, and defined-term/title edges, ``[intake] term_edges = true``);
4. prints precision, recall and F1 of the recovered edges: statement edges, proof edges, and
   all edges (unit pairs, scope ignored; an edge found from a statement counts as a statement
   edge even when the ground truth lists it in the proof, and then misses there).

This is the baseline the model-assisted Specifier must beat (issue 8, DESIGN.md §1).
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fyan.config import IntakeSection  # noqa: E402
from fyan.intake.tex import read_tex  # noqa: E402
from fyan.specifier.dag import extract_edges  # noqa: E402
from fyan.specifier.units import build_units  # noqa: E402

KINDS = IntakeSection().unit_kinds
_USES = re.compile(r"\\uses\s*\{[^{}]*\}")


def ground_truth(main: Path) -> tuple[dict[bool, set[tuple[str, str]]], int]:
    cat = read_tex(main)
    units = build_units(cat, KINDS)
    owner = {i: u.id for u in units for i in u.statements}
    truth: dict[bool, set[tuple[str, str]]] = {False: set(), True: set()}
    for u in units:
        for i in u.statements:
            for r in cat.statements[i].references:
                site = cat.labels.get(r.label)
                if r.macro != "uses" or site is None or site.statement_index not in owner:
                    continue
                target = owner[site.statement_index]
                if target != u.id:
                    truth[r.in_proof].add((u.id, target))
    truth[True] -= truth[False]  # listed in both: a statement dependency
    return truth, len(units)


def stripped_copy(main: Path, dest: Path) -> Path:
    """Copy the main file's folder to ``dest`` with every ``\\uses{...}`` removed from .tex files."""
    src = main.parent
    shutil.copytree(src, dest, dirs_exist_ok=True)
    for path in dest.rglob("*.tex"):
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        path.write_text(_USES.sub("", text), encoding="utf-8", errors="surrogateescape")
    return dest / main.name


def predicted(main: Path, term_edges: bool) -> tuple[dict[bool, set[tuple[str, str]]], float]:
    start = time.perf_counter()
    cat = read_tex(main)
    units = build_units(cat, KINDS)
    edges, _ = extract_edges(cat, units, unknown_references="warn", term_edges=term_edges)
    elapsed = time.perf_counter() - start
    pred: dict[bool, set[tuple[str, str]]] = {False: set(), True: set()}
    for e in edges:
        pred[e.in_proof].add((e.unit, e.depends_on))
    pred[True] -= pred[False]
    return pred, elapsed


def scores(pred: set, truth: set) -> dict[str, float | int]:
    tp = len(pred & truth)
    p = tp / len(pred) if pred else 0.0
    r = tp / len(truth) if truth else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(f, 3), "predicted": len(pred),
            "truth": len(truth), "correct": tp}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("blueprint", type=Path, help="main TeX file of the blueprint")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    main_file = args.blueprint.resolve()
    truth, n_units = ground_truth(main_file)
    results = {"blueprint": str(args.blueprint), "units": n_units,
               "truth_edges": {"statement": len(truth[False]), "proof": len(truth[True])}, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="fyan-dag-quality-") as tmp:
        copy = stripped_copy(main_file, Path(tmp) / "src")
        for name, term_edges in (("references only", False), ("default (references + terms)", True)):
            pred, elapsed = predicted(copy, term_edges)
            results["runs"][name] = {
                "seconds": round(elapsed, 3),
                "statement": scores(pred[False], truth[False]),
                "proof": scores(pred[True], truth[True]),
                "all": scores(pred[False] | pred[True], truth[False] | truth[True]),
            }
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{args.blueprint}: {n_units} units; ground truth {len(truth[False])} statement + "
          f"{len(truth[True])} proof edges from \\uses (stripped before the run)")
    for name, run in results["runs"].items():
        print(f"  {name}: intake + edges {run['seconds']:.2f} s")
        for scope in ("statement", "proof", "all"):
            s = run[scope]
            print(f"    {scope:<9} P={s['precision']:.3f} R={s['recall']:.3f} F1={s['f1']:.3f} "
                  f"({s['correct']} correct of {s['predicted']} predicted, {s['truth']} true)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
