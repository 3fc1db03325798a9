"""The vocabulary every layer shares: choices, errors, exit codes, paths, accounts,
the launcher.toml format and the one Claude version reader. Imports nothing else of
``wizard``."""
