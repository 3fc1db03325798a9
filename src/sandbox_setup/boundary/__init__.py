"""The workspace boundary (docs/design.md invariant 8): read-only binds, the session change
record, the end-of-session check and quarantine; used by the launcher and the audit."""
