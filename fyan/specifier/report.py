"""The intake report as text: what ``fyan init`` prints after splitting a document into
theorem units, and what ``fyan run`` prints when it ingested the source first."""

from __future__ import annotations

from typing import Any


def _list(items: list[str], limit: int = 12) -> str:
    return ", ".join(items[:limit]) + (f", ... {len(items) - limit} more (--json lists them all)"
                                       if len(items) > limit else "")


def intake_report(report: Any) -> str:
    """The intake report of ``fyan init``: statements by kind, environments used but
    not classified (with counts), references seen/kept/unresolved, dependency edges by kind,
    isolated statements and disconnected components, empty ``\\ref{}``/``\\label{}``; units by id."""
    r = report.references
    lines = ["Intake report:",
             "  statements by kind: " + ", ".join(f"{k} {n}" for k, n in
                                                  sorted(report.kinds.items(), key=lambda x: (-x[1], x[0])))]
    if report.unclassified_envs:
        lines.append(f"  environments used but not classified ({len(report.unclassified_envs)}; check none is a "
                     "statement): " + _list([f"{k} ({n})" for k, n in report.unclassified_envs.items()]))
    else:
        lines.append("  environments used but not classified: none"
                     + (f" (besides {report.layout_envs} layout environment(s): figure, center, ...)"
                        if report.layout_envs else ""))
    other = r.seen - r.kept - r.unresolved
    lines.append(f"  references: {r.seen} seen, {r.kept} kept (dependency or mention), {r.unresolved} unresolved"
                 + (f", {other} to no unit (running text {r.to_text}, non-unit statements {r.to_non_unit}, "
                    f"the unit itself {r.to_self})" if other else ""))
    unresolved = [f"{w.where} {w.message.split(': unknown label')[0]}" for w in report.warnings
                  if w.code == "unknown-label"]
    if unresolved:
        lines.append("  unresolved references (LaTeX prints ??; each is a finding of its unit): "
                     + _list(unresolved, 8))
    kinds = ", ".join(f"{k} {n}" for k, n in report.edges_by_kind.items()) or "none"
    lines.append(f"  dependency edges by kind: {kinds}; {len(report.mentions)} mention(s)")
    if report.isolated:
        lines.append(f"  isolated statements (no edge in or out): {len(report.isolated)}: {_list(report.isolated)}")
    else:
        lines.append("  isolated statements (no edge in or out): none")
    comps = report.components
    lines.append(f"  connected components (isolated statements apart): {len(comps)}"
                 + (f" (sizes {_list([str(n) for n in comps])})" if len(comps) > 1 else ""))
    if report.unfollowed_includes:
        lines.append(f"  included files not read ({len(report.unfollowed_includes)}; statements in them are missing): "
                     + _list(report.unfollowed_includes, 8))
    if report.empty_references or report.empty_labels:
        lines.append(f"  empty \\ref{{}}: {len(report.empty_references)}"
                     + (f" ({_list(report.empty_references, 6)})" if report.empty_references else "")
                     + f"; empty \\label{{}}: {len(report.empty_labels)}"
                     + (f" ({_list(report.empty_labels, 6)})" if report.empty_labels else ""))
    else:
        lines.append("  empty \\ref{} or \\label{}: none")
    return "\n".join(lines) + "\n"


def ingest_details(report: Any) -> str:
    """The lines after an ingest's summary (``fyan init`` and the first ``fyan run``/``resume``):
    warnings (printed on stderr by the caller), mentions, problem.tex lint findings."""
    errors = sum(f.severity == "error" for f in report.findings)
    return ((f"  {len(report.warnings)} warning(s) on stderr\n" if report.warnings else "")
            + (f"  {len(report.mentions)} reference(s) kept as mentions, not dependencies (each problem.tex lists "
               "its own; --json lists them all)\n" if report.mentions else "")
            + (f"  problem.tex lints: {len(report.findings)} finding(s), {errors} error(s)\n" if report.findings else "")
            + "".join(f"    {f}\n" for f in report.findings[:10]))

