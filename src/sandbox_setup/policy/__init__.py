"""Each security rule once, as pure functions: plan, audit, launcher and TUI call
these and nothing else decides the same question. Imports only :mod:`sandbox_setup.base`."""
