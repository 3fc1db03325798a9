"""The egress proxy of a session (invariant 7): its network namespace plumbing,
the proxy process, its wire format and its probe."""
