"""Adoption and drift reports as text (``fyan init --lean-project``, ``fyan adopt``, ``fyan drift``)."""

from __future__ import annotations


def adoption_text(report) -> str:
    """An adoption report (``fyan.adopt.run.adopt``) as text: counts, what was left out, drift."""
    c = report.counts
    lines = [f"Adopted {report.package}: {c['adopted']} unit(s) complete by adoption, {c['candidate']} with an "
             f"existing statement to prove (candidate), {c['pipeline']} through the full pipeline"]
    lines += targets_text(report)
    lines.append(drift_text(report.drift, report.drift_counts))
    return "\n".join(lines)


def targets_text(report) -> list[str]:
    """What adoption left out: target modules that do not build, files outside every target."""
    lines = []
    if report.unbuilt:
        lines.append(f"Not adopted ({len(report.unbuilt)} target module(s) not built): "
                     + "; ".join(f"{m} {why}" for m, why in list(report.unbuilt.items())[:20])
                     + (" ..." if len(report.unbuilt) > 20 else ""))
    if report.outside:
        lines.append(f"Ignored ({len(report.outside)} file(s) outside every Lake target): "
                     + ", ".join(report.outside[:20]) + (" ..." if len(report.outside) > 20 else ""))
    return lines


def connectivity_text(isolated: list[str], components: list[list[str]]) -> list[str]:
    """Isolated statements and disconnected components of the blueprint's dependency graph."""
    lines = []
    if isolated:
        lines.append(f"Isolated ({len(isolated)}: no \\uses in or out): " + ", ".join(isolated[:30])
                     + (" ..." if len(isolated) > 30 else ""))
    if len(components) > 1:
        lines.append(f"Disconnected: {len(components)} components, no \\uses between them: "
                     + "; ".join(f"{{{', '.join(c[:6])}{', ...' if len(c) > 6 else ''}}} ({len(c)})"
                                 for c in components[:10]))
    return lines


def drift_text(found, tally) -> str:
    """Drift between the blueprint and the compiled environment: the tally, then up to 40 findings."""
    if not found:
        return "Drift: none (the blueprint's \\lean and \\leanok match the compiled environment)"
    lines = ["Drift: " + ", ".join(f"{n} {k}" for k, n in tally.items() if n)]
    lines += [f"  {d.label or d.unit or 'package'}: {d.kind}: {d.detail}" for d in found[:40]]
    if len(found) > 40:
        lines.append(f"  ... {len(found) - 40} more (--json lists them all)")
    return "\n".join(lines)

