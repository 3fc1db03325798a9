"""sandbox-setup core: answers -> plan -> apply, audit, the launcher and the CLI.

Nothing here imports Textual except :mod:`wizard.app`, the TUI entry point.
"""
