"""The agent's account as an apply makes, judges and undoes it: users and groups
(``useradd``/``groupadd`` and their ``--prefix`` fallbacks), the account files, the
agent account's checks, the workspace group, login routes, and their undo."""
