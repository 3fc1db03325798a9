"""The audit: drift, what the mode needs from the host, the safety rules, the grade."""
