"""Run the real Claude Code for one scripted turn against a fake Messages API.

:func:`run_claude_turn` starts ``claude --print`` non-interactively (stdin
closed, a timeout, its own process group) with a small, explicit environment:
the API endpoint and key (exported, or through ``--settings '{"env": ...}'``),
``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` (nothing leaves for Anthropic's
hosts), ``DISABLE_AUTOUPDATER=1``, a temp ``HOME`` and ``TMPDIR``. With
``as_user`` it drops to that account first (``setpriv``, as root), so the
Bash tool runs as the agent would.

``managed_settings`` puts a ``/etc/claude-code/managed-settings.json`` in front
of Claude without touching the host: Claude runs in a private mount namespace
where ``/etc`` is an overlay whose upper layer lives in the temp tree. Some keys
(``sandbox.bwrapPath``, ``sandbox.socatPath``) are honoured only from there.

:func:`claude_tree` makes the temp tree such a run needs: a 0755 base under
``$TMPDIR`` (pytest's own ``tmp_path`` is 0700, which ``nobody`` cannot
traverse) with a home, a workspace and a temp directory owned by the account.
:func:`path_without` builds a ``PATH`` that lacks some tools (e.g. socat)
without touching ``/usr``.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sandbox_setup.base.accounts import Account

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_PROMPT = "Run the scripted command."
FAKE_API_KEY = "sk-ant-api03-fake-key-for-tests"

CredentialsVia = Literal["env", "settings", "user-settings"]
OutputFormat = Literal["json", "stream-json"]


@dataclass(frozen=True)
class ClaudeTree:
    """Where one Claude run lives: every directory is the account's, under a 0755 base."""

    base: Path
    home: Path
    workspace: Path
    tmp: Path


@contextmanager
def claude_tree(
    account: Account | None = None, prefix: str = "claude-e2e-"
) -> Iterator[ClaudeTree]:
    """A fresh :class:`ClaudeTree` for ``account`` (default: the caller), removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        closed = [p for p in base.parents if not p.stat().st_mode & 0o001]
        if account is not None and closed:
            raise AssertionError(
                f"{account.name} cannot traverse {closed[0]} (no o+x): point TMPDIR elsewhere"
            )
        base.chmod(0o755)
        tree = ClaudeTree(base, base / "home", base / "workspace", base / "tmp")
        for directory, mode in ((tree.home, 0o700), (tree.workspace, 0o755), (tree.tmp, 0o700)):
            directory.mkdir()
            directory.chmod(mode)
            if account is not None:
                os.chown(directory, account.uid, account.gid)
        yield tree
    finally:
        shutil.rmtree(base, ignore_errors=True)


def path_without(tools: Collection[str], directory: Path, path: str = DEFAULT_PATH) -> str:
    """A PATH of one directory holding symlinks to every command on ``path`` but ``tools``.

    This is how a test hides socat or bwrap from Claude without changing the host.
    The first command of a name wins, as a PATH lookup would find it.
    """
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    for entry in path.split(":"):
        source = Path(entry)
        if not source.is_dir():
            continue
        for command in sorted(source.iterdir()):
            link = directory / command.name
            if command.name in tools or link.is_symlink() or link.exists():
                continue
            link.symlink_to(command)
    return str(directory)


@dataclass(frozen=True)
class ClaudeRun:
    """What one ``claude --print`` run left behind."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def events(self) -> list[dict[str, Any]]:
        """The JSON objects of the output (one for ``json``, one a line for ``stream-json``)."""
        found = []
        for line in self.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    found.append(json.loads(line))
                except ValueError:
                    continue
        return found

    def result(self) -> dict[str, Any]:
        """The final ``{"type": "result", ...}`` object, or an AssertionError with the output."""
        for event in reversed(self.events()):
            if event.get("type") == "result":
                return event
        raise AssertionError(f"claude printed no result object (exit {self.returncode}):\n{self}")

    def __str__(self) -> str:
        return (
            f"$ {' '.join(self.argv)}\nexit {self.returncode}\n"
            f"--- stdout\n{self.stdout[-4000:]}\n--- stderr\n{self.stderr[-4000:]}"
        )


def _drop_to(account: Account) -> list[str]:
    # --init-groups needs the account in the host's passwd; an account made with
    # `useradd --prefix` is not, and gets no supplementary groups instead.
    try:
        pwd.getpwuid(account.uid)
        groups = "--init-groups"
    except KeyError:
        groups = "--clear-groups"
    return ["/usr/bin/setpriv", f"--reuid={account.uid}", f"--regid={account.gid}", groups, "--"]


def with_managed_settings(
    argv: list[str],
    settings: Mapping[str, Any],
    base: Path,
    drop_ins: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[str]:
    """``argv`` run where /etc/claude-code/managed-settings.json holds ``settings``
    and ``/etc/claude-code/managed-settings.d/NAME`` each of ``drop_ins``.

    Root only. The overlay exists in a private mount namespace (``unshare
    --mount --propagation private``): the host's /etc never changes, and the
    mount is gone with the process.
    """
    upper, work = base / "etc-upper", base / "etc-work"
    (upper / "claude-code").mkdir(parents=True, exist_ok=True)
    work.mkdir(exist_ok=True)
    for directory in (upper, upper / "claude-code"):
        directory.chmod(0o755)
    managed = upper / "claude-code" / "managed-settings.json"
    managed.write_text(json.dumps(settings, indent=2))
    managed.chmod(0o644)
    if drop_ins:
        directory = upper / "claude-code" / "managed-settings.d"
        directory.mkdir(mode=0o755, exist_ok=True)
        for name, content in drop_ins.items():
            (directory / name).write_text(json.dumps(content, indent=2))
            (directory / name).chmod(0o644)
    # The overlay puts the file in /etc; the bind hides whatever else the host's
    # /etc/claude-code holds (managed-settings.d/, which the overlay would merge in).
    mount = (
        f"mount -t overlay overlay -o lowerdir=/etc,upperdir={upper},workdir={work} /etc"
        f" && mount --bind {upper / 'claude-code'} /etc/claude-code"
        ' && exec "$@"'
    )
    unshare = shutil.which("unshare") or "/usr/bin/unshare"
    return [unshare, "--mount", "--propagation", "private", "/bin/sh", "-c", mount, "sh", *argv]


def run_claude_turn(
    claude: str | Path,
    *,
    base_url: str,
    home: Path,
    cwd: Path,
    api_key: str = FAKE_API_KEY,
    prompt: str = DEFAULT_PROMPT,
    credentials_via: CredentialsVia = "env",
    settings: Mapping[str, Any] | None = None,
    user_settings: Mapping[str, Any] | None = None,
    managed_settings: Mapping[str, Any] | None = None,
    managed_drop_ins: Mapping[str, Mapping[str, Any]] | None = None,
    env_extra: Mapping[str, str] | None = None,
    path: str = DEFAULT_PATH,
    tmpdir: Path | None = None,
    extra_args: Sequence[str] = (),
    output_format: OutputFormat = "json",
    skip_permissions: bool = True,
    as_user: Account | None = None,
    timeout: float = 180,
) -> ClaudeRun:
    """Run ``claude --print PROMPT`` once and return what it printed.

    ``credentials_via="env"`` exports ``ANTHROPIC_BASE_URL`` and
    ``ANTHROPIC_API_KEY``; ``"settings"`` passes them in the ``env`` key of
    ``--settings`` JSON instead, ``"user-settings"`` in the ``env`` key of
    ``HOME/.claude/settings.json`` (all three work with 2.1.197). ``settings`` is more
    ``--settings`` JSON (flag settings); ``user_settings`` is written to
    ``HOME/.claude/settings.json`` (owned by ``as_user``); ``managed_settings``
    (and ``managed_drop_ins``, files of ``managed-settings.d/``) see the module
    docstring. ``skip_permissions`` adds ``--dangerously-skip-permissions`` (refused
    by Claude as root: use ``as_user``, or ``extra_args=["--allowedTools=Bash"]``
    instead).
    """
    credentials = {"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": api_key}
    env = {
        "PATH": path,
        "HOME": str(home),
        "TMPDIR": str(tmpdir or home),  # Claude's scratch files stay in the tree
        "LANG": "C.UTF-8",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        # The fake API is on loopback: a refused connection is final, not worth
        # Claude's default ten retries with backoff.
        "CLAUDE_CODE_MAX_RETRIES": "2",
    }
    if as_user is not None:
        env |= {"USER": as_user.name, "LOGNAME": as_user.name}
    flag_settings: dict[str, Any] = json.loads(json.dumps(settings or {}))
    file_settings: dict[str, Any] | None = (
        json.loads(json.dumps(user_settings)) if user_settings is not None else None
    )
    if credentials_via == "env":
        env |= credentials
    elif credentials_via == "settings":
        flag_settings.setdefault("env", {}).update(credentials)
    else:
        file_settings = file_settings or {}
        file_settings.setdefault("env", {}).update(credentials)
    env |= dict(env_extra or {})
    if file_settings is not None:
        _write_user_settings(home, file_settings, as_user)

    argv = [str(claude), "--print", "--output-format", output_format]
    if output_format == "stream-json":
        argv.append("--verbose")  # --print refuses stream-json without it
    if skip_permissions:
        argv.append("--dangerously-skip-permissions")
    if flag_settings:
        argv += ["--settings", json.dumps(flag_settings)]
    argv += [*extra_args, "--", prompt]
    if as_user is not None:
        argv = _drop_to(as_user) + argv
    if managed_settings is not None:
        argv = with_managed_settings(argv, managed_settings, home.parent, managed_drop_ins)
    return _run(argv, env, cwd, timeout)


def _write_user_settings(home: Path, settings: Mapping[str, Any], account: Account | None) -> None:
    directory = home / ".claude"
    directory.mkdir(mode=0o700, exist_ok=True)
    target = directory / "settings.json"
    target.write_text(json.dumps(settings, indent=2))
    if account is not None:
        for path in (directory, target):
            os.chown(path, account.uid, account.gid)


def _run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> ClaudeRun:
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: a timeout kills Bash children too
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        raise AssertionError(
            f"claude did not finish within {timeout}s:\n"
            + str(ClaudeRun(tuple(argv), -9, stdout, stderr))
        ) from None
    return ClaudeRun(tuple(argv), proc.returncode, stdout, stderr)
