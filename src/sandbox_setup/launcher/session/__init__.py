"""Running Claude in a session: supervision and the release gate, the pty relay,
the session keyring and the session cgroup (invariant 10)."""
