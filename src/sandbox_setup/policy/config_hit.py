"""One setting found in a file root's tools obey, and why it matters."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ConfigHit:
    """A setting that makes root's tool run a command or go where the agent chose.

    ``kind``: ``runs`` (executes a command), ``redirects`` (sends git's traffic,
    credentials, reads or writes elsewhere), ``includes`` (pulls in another file).
    ``locator`` finds the setting again for a rewrite: the config entry's offset,
    or the JSON path of a Claude setting.
    """

    key: str
    value: str | None
    why: str
    kind: str = "runs"
    line: int = 0
    locator: tuple[str | int, ...] = ()

    @property
    def identity(self) -> str:
        """What names this setting across two reads of a file (key and value)."""
        return f"{self.key}={self.value}"
