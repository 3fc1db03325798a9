"""Probes of what this host can do for sandboxing Claude Code.

Each check gathers facts (reads files under a root, runs tiny experiments) and a
pure judging function turns them into a :class:`sandbox_setup.checks.model.Finding`. Nothing in
this package writes to the host or imports Textual.
"""
