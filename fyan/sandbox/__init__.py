"""The process sandbox: how Fyan runs a program it does not trust, and reads what it wrote.

``runner`` (timeout, memory limit, bubblewrap confinement, environment, process groups, command
artifacts), ``seccomp`` (the system-call filter inside the confinement), ``reaper`` (ends a
confined process tree), ``admission`` (admits Lean processes by memory), ``safefile`` (reads and
writes that never follow a link planted by an agent). Knows nothing of Lean or of a project.
"""
