"""``fyan selftest``: the cheat corpus run through the real completion gate on the
user's own toolchain (``run``), the corpus as data (``corpus``), the two-unit project it runs on
(``harness``), and which toolchains the gate trusts (``trust``)."""
