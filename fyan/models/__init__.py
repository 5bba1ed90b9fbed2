"""Types that more than one layer reads: declared once, below everything that uses them.

``gate_report`` (the completion gate's ``GateReport`` and its ``CheckResult`` rows, read by the
gates, the agents, SA-Pass, the selftest and the commands), ``replies`` (the model replies a
deterministic check reads: the Planner's ``LemmaDag``, the Curator's and the Auditor's replies),
``plan`` (what the state gateway needs of an ingest plan). A module here imports nothing of
Fyan's but this package and ``fyan.errors``.
"""
