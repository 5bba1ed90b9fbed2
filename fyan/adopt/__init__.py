"""Adoption of an existing Lake package by a project: resume a stalled blueprint.

* ``marks`` — the blueprint's claims per theorem unit (``\\lean``, ``\\leanok``, ``\\uses``);
* ``package`` — the adopted Lake package's name, libraries, modules and toolchain pin;
* ``decide`` — adopted / candidate / pipeline, from the trusted inspector's evidence only;
* ``drift`` — the blueprint's marks against the compiled environment;
* ``candidate`` — a candidate unit's freeze must restate the existing declaration;
* ``run`` — build, inspect, decide, record through the gateway; re-verification;
* ``patch`` — write back: new modules, candidates proved in place, blueprint marks.
"""
