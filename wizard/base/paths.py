"""Where sandbox-setup reads and writes, for the live system or under ``--root``.

Paths come in two kinds. A *target* path is what the configured system sees
(``/root/.config/sandbox-setup/launcher.toml``); it is what gets recorded in
configs and journals. A *real* path is where this process touches it
(``DIR/root/.config/...`` under ``--root DIR``). :meth:`Layout.real` maps one to
the other; nothing else should join roots by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import platformdirs

from wizard.base.accounts import Account, is_live_root, operator_account

APP = "sandbox-setup"
MANAGED_SETTINGS = PurePosixPath("/etc/claude-code/managed-settings.json")
# Where a root-owned copy of the Claude binary goes when the original lives in a
# private home the agent cannot read.
CLAUDE_INSTALL_DIR = PurePosixPath("/usr/local/lib/sandbox-setup")


@dataclass(frozen=True)
class Layout:
    """All paths of one run: the root, the operator, and derived locations."""

    root: Path
    operator: Account

    @classmethod
    def for_root(cls, root: Path | str = "/") -> Layout:
        root = Path(root).resolve()
        return cls(root=root, operator=operator_account(root))

    @property
    def live(self) -> bool:
        return is_live_root(self.root)

    def real(self, target: PurePosixPath | Path | str) -> Path:
        """The path this process uses for the target-system path ``target``."""
        target = PurePosixPath(target)
        if not target.is_absolute():
            raise ValueError(f"target path must be absolute: {target}")
        if self.live:
            return Path(target)
        return self.root.joinpath(*target.parts[1:])

    # Operator-owned locations (target paths).
    @property
    def config_dir(self) -> PurePosixPath:
        if self.live:
            return PurePosixPath(platformdirs.user_config_path(APP))
        return PurePosixPath(self.operator.home) / ".config" / APP

    @property
    def state_dir(self) -> PurePosixPath:
        if self.live:
            return PurePosixPath(platformdirs.user_state_path(APP))
        return PurePosixPath(self.operator.home) / ".local" / "state" / APP

    @property
    def launcher_config(self) -> PurePosixPath:
        return self.config_dir / "launcher.toml"

    @property
    def answers(self) -> PurePosixPath:
        return self.config_dir / "answers.toml"

    @property
    def journal(self) -> PurePosixPath:
        return self.state_dir / "journal.jsonl"

    @property
    def backups_dir(self) -> PurePosixPath:
        return self.state_dir / "backups"

    @property
    def lock(self) -> PurePosixPath:
        return self.state_dir / "apply.lock"

    @staticmethod
    def user_settings(home: PurePosixPath | Path) -> PurePosixPath:
        return PurePosixPath(home) / ".claude" / "settings.json"

    @property
    def managed_settings(self) -> PurePosixPath:
        return MANAGED_SETTINGS
