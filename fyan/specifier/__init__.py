"""Specifier (deterministic part): theorem units, the dependency DAG and ``problem.tex``."""
