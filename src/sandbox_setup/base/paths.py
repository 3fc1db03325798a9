"""Where sandbox-setup reads and writes, for the live system or under ``--root``.

Paths come in two kinds. A *target* path is what the configured system sees
(``/root/.config/sandbox-setup/launcher.toml``); it is what gets recorded in
configs and journals. A *real* path is where this process touches it
(``DIR/root/.config/...`` under ``--root DIR``). :meth:`Layout.real` maps one to
the other; nothing else should join roots by hand.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import platformdirs

from sandbox_setup.base.accounts import Account, is_live_root, operator_account
from sandbox_setup.base.pathfacts import PathFacts, path_facts

# The directory name of the operator's config and state (platformdirs' "appname").
APP = "sandbox-setup"
_MAX_SYMLINKS = 40
MANAGED_SETTINGS = PurePosixPath("/etc/claude-code/managed-settings.json")
# Where a root-owned copy of the Claude binary goes when the original lives in a
# private home the agent cannot read.
CLAUDE_INSTALL_DIR = PurePosixPath("/usr/local/lib/sandbox-setup")
# The workspaces' trusted state, once for the whole host (docs/design.md invariant 8): root's,
# whichever operator's state directory a session uses.
WORKSPACE_TRUST_DIR = PurePosixPath("/var/lib/sandbox-setup/workspaces")


@dataclass(frozen=True, slots=True)
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

    def resolve(self, target: PurePosixPath | str) -> PurePosixPath:
        """``target`` with every symlink followed *inside* the root (a target path).

        An absolute link target means the target system's path, so under ``--root``
        it is mapped into DIR again instead of escaping to the host. A loop ends
        the walk where it is (the caller then judges a symlink, which fails).
        """
        parts = list(PurePosixPath(target).parts[1:])
        resolved = PurePosixPath("/")
        hops = 0
        while parts:
            candidate = resolved / parts.pop(0)
            real = self.real(candidate)
            if real.is_symlink():
                hops += 1
                if hops > _MAX_SYMLINKS:
                    return candidate
                link = PurePosixPath(os.readlink(real))
                base = PurePosixPath("/") if link.is_absolute() else resolved
                parts = list((base / link).parts[1:]) + parts
                resolved = PurePosixPath("/")
                continue
            resolved = candidate
        # Collapse ".." lexically: every link was already followed above.
        return PurePosixPath(os.path.normpath(resolved))

    def chain(self, resolved: PurePosixPath) -> tuple[PathFacts, list[PathFacts]]:
        """``lstat`` facts of the target path ``resolved`` (symlinks already followed)
        and of every directory above it up to the target's ``/``, top first; each
        named by its real path (the one the operator can act on)."""

        def facts(target: PurePosixPath) -> PathFacts:
            real = self.real(target)
            return path_facts(real, str(real), follow=False)

        return facts(resolved), [facts(p) for p in reversed(resolved.parents)]

    # Operator-owned locations (target paths).
    def _xdg_inside(self, variable: str) -> PurePosixPath | None:
        """Under ``--root DIR``: ``$variable`` as a target path when it names a
        directory inside DIR (a second setup of the same tree, with its own config
        and state, as ``XDG_*_HOME`` gives one on a live host); else None."""
        value = os.environ.get(variable, "")
        if not value.startswith("/"):
            return None
        real = PurePosixPath(os.path.normpath(value))
        if real == PurePosixPath(self.root) or PurePosixPath(self.root) not in real.parents:
            return None
        return PurePosixPath("/") / real.relative_to(PurePosixPath(self.root))

    @property
    def config_dir(self) -> PurePosixPath:
        if self.live:
            return PurePosixPath(platformdirs.user_config_path(APP))
        xdg = self._xdg_inside("XDG_CONFIG_HOME")
        if xdg is not None:
            return xdg / APP
        return PurePosixPath(self.operator.home) / ".config" / APP

    @property
    def state_dir(self) -> PurePosixPath:
        if self.live:
            return PurePosixPath(platformdirs.user_state_path(APP))
        xdg = self._xdg_inside("XDG_STATE_HOME")
        if xdg is not None:
            return xdg / APP
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
