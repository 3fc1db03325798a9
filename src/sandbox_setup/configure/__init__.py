"""Answers -> plan -> apply: the writers, accounts, ACLs, the settings merge, the
journal and undo."""
