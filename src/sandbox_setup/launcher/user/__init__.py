"""User mode's session parts: its Landlock plan and the helper's argv (landlock_plan),
the helper that applies it in the session (landlock_exec), and the gate that verifies
it before Claude is released (landlock_gate)."""
