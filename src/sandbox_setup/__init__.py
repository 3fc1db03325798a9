"""sandbox-setup core: answers -> plan -> apply, audit, the launcher and the CLI.

Nothing here imports Textual except :mod:`sandbox_setup.tui.app`, the TUI entry point.
"""
