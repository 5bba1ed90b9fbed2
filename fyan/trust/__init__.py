"""What Fyan has established about a toolchain, read by the completion gate and adoption.

``corpus`` (the cheat corpus as data: every known way to fool the gate and the honest controls),
``learn`` (the environment extensions a toolchain registers, learned by compiling the corpus),
``record`` (the record of a passing ``fyan selftest`` for a toolchain, and whether the gate may
trust that toolchain). ``fyan.selftest`` writes them by running the gate; the gate only reads
them.
"""
