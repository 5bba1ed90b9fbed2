"""The local web dashboard (``fyan dashboard``, or with the daemon): see ``server.py``."""
