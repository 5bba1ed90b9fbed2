"""``fyan selftest``: the cheat corpus run through the real completion gate on the
user's own toolchain (``run``) on a two-unit project (``harness``); the corpus and the trust
records it writes are in ``fyan.trust``."""
