"""``Answers``: everything the operator decides, from the TUI or an answers file.

Both paths fill this one value and hand it to :func:`wizard.plan.build_plan`.
Loading from and dumping to ``answers.toml`` are symmetric (implemented below
``Answers``); validation errors name the key and the problem.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from checks.model import Mode

DEFAULT_AGENT_USER = "claude-agent"


@dataclass(frozen=True)
class Answers:
    """The operator's decisions. ``None`` means "derive from the report/defaults"."""

    mode: Mode
    workspaces: tuple[PurePosixPath, ...] = ()
    agent_user: str = DEFAULT_AGENT_USER
    claude: PurePosixPath | None = None  # None: find `claude` on PATH
    settings_scope: str | None = None  # "user" | "managed"; None: default for the mode
    inner_sandbox: str | None = None  # "strong" | "weak" | "off"; None: from the nested probes
    network: str = "host"  # "host" | "none"
    copy_login: bool = False
    accept_unsafe_root: bool = False
    # Set when acceptance is recorded (who and when); written to launcher.toml [unsafe].
    accepted_by: str | None = None
    accepted_at: str | None = None
    extra: dict[str, object] = field(default_factory=dict, compare=False)
