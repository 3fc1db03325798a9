"""One thin module per CLI action: arguments -> core -> output and an exit code."""
