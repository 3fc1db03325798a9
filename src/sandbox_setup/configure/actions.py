"""Plan actions: each step of a plan can describe itself, tell whether it would
change anything now, show its diff and the commands it runs, and apply itself
inside a journal :class:`~sandbox_setup.configure.transaction.Transaction`.

Public shape (the audit and the TUI rely on it):

- ``.kind``: ``write-file`` | ``copy-login`` | ``install-claude`` (file actions,
  subclasses of :class:`WriteFile`, with ``.desired()`` and ``.current()``),
  ``create-group`` | ``create-user`` | ``add-to-group`` | ``leave-group`` |
  ``set-shell`` | ``workspace-access`` | ``create-directory`` (a new workspace);
- ``.target``: a target-system path or an account name;
- ``.describe()``, ``.is_change()``, ``.diff()`` (unified diff, "" for
  non-files; secrets and binaries are summarized, never printed),
  ``.commands()`` (argv lists it will run).

File content is computed on demand from what is on disk (a settings merge needs
the current file), so ``is_change()`` and ``diff()`` always describe *now*.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from sandbox_setup.base.accounts import lookup_user
from sandbox_setup.base.errors import SetupError
from sandbox_setup.base.message import message
from sandbox_setup.base.paths import Layout
from sandbox_setup.configure import fsops
from sandbox_setup.configure.accounts import users
from sandbox_setup.configure.accounts.account_files import account_step
from sandbox_setup.configure.transaction import Transaction
from sandbox_setup.policy.access import READ, can_access
from sandbox_setup.policy.new_workspace import PARENT_MODE
from sandbox_setup.policy.trust import kept_file_problems, refuse


class Action:
    """One step of a plan."""

    kind = "action"
    writes_file = False  # a file's content (its diff is the change)

    @property
    def target(self) -> str:
        """The target-system path or the account name the step acts on."""
        return ""

    def describe(self) -> str:
        """What the step does, or, when nothing needs doing, what already exists
        ("user x already exists"), never "create ... unchanged". Computed from the
        target as it is now, like :meth:`is_change`: after the step ran it says what
        exists. An apply takes it before each step, and reports that (it still says
        "create" for what the step created)."""
        return self.describe_change() if self.is_change() else self.describe_existing()

    def describe_change(self) -> str:
        raise NotImplementedError

    def describe_existing(self) -> str:
        raise NotImplementedError

    def is_change(self) -> bool:
        raise NotImplementedError

    def diff(self) -> str:
        return ""

    def commands(self) -> list[list[str]]:
        return []

    def backs_up(self) -> bool:
        """Whether applying it saves a backup of what it replaces first."""
        return False

    def apply(self, txn: Transaction) -> None:
        raise NotImplementedError

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "target": self.target,
            "description": self.describe(),
            "change": self.is_change(),
            "commands": self.commands(),
        }


@dataclass(eq=False)
class WriteFile(Action):
    """Write a file: content rendered from the current content (a merge) or fixed.

    Existing files keep their mode and owner (see :meth:`_attrs_for` for the two
    safety exceptions) unless ``enforce`` (secrets, the Claude binary copy)
    requires ``mode`` and ``owner``.
    """

    layout: Layout
    path: PurePosixPath
    render: Callable[[bytes | None], bytes]
    owner: str  # account name in the target system, resolved at apply time
    label: str
    mode: int = 0o644
    dir_mode: int = 0o755
    enforce: bool = False
    secret: bool = False
    binary: bool = False
    # The account that must be able to read the file (Claude Code, run as the
    # agent, reading its settings): a kept mode that would shut it out is widened.
    readable_by: str | None = None
    kind: str = field(default="write-file")
    writes_file = True

    @property
    def target(self) -> str:
        return str(self.path)

    @property
    def real(self) -> Path:
        return self.layout.real(self.path)

    def state(self) -> fsops.FileState | None:
        return fsops.read_file(self.layout.root, self.real)

    def current(self) -> bytes | None:
        state = self.state()
        return state.data if state else None

    def desired(self) -> bytes:
        return self.render(self.current())

    def backs_up(self) -> bool:
        return self.current() is not None

    def check_trusted(self) -> None:
        """Refuse (exit 3, naming the file) an existing file this step would merge or
        keep when the trust rule does not allow its owner, its mode or a directory on
        its path (docs/design.md invariant 12): a re-apply must never launder a file someone
        else could write into root's. A step that writes fixed content with its own
        mode and owner (``enforce``) reads nothing from the old file. What is not a
        regular file (a FIFO, a directory), or cannot be looked at, is bad input the
        read reports (exit 2, naming it), not a question of trust."""
        if self.enforce:
            return
        ids = self._owner_ids()
        operator = self.layout.operator
        holder = ids[0] if ids else operator.uid
        holder_name = self.owner if ids else operator.name
        try:
            leaf, dirs = self.layout.chain(self.layout.resolve(self.path))
        except OSError:
            return  # unreadable on the way: the read names it
        root_file = holder in (0, operator.uid)
        allowed = "you or root" if root_file else f"{holder_name} or root"
        problems = kept_file_problems(leaf, dirs, holder, operator.uid, holder_name)
        refuse((p for p in problems if not (p.leaf and p.kind == "type")), self.label, allowed)

    def _owner_ids(self) -> tuple[int, int] | None:
        account = lookup_user(self.owner, self.layout.root)
        return (account.uid, account.gid) if account else None

    def _attrs_for(self, state: fsops.FileState | None) -> tuple[int, int, int] | None:
        """(mode, uid, gid) the file should have, or None if the owner is unknown yet.

        A replaced file keeps its mode and owner, except that group/world write
        bits are dropped and an owner other than root or the planned one is
        replaced: the launcher refuses such a config, and an agent that owns the
        managed settings could switch its sandbox off. A file ``readable_by``
        someone gets the read bits that account needs (see :meth:`_readable`).
        """
        ids = self._owner_ids()
        if ids is None:
            return None
        if state is None or self.enforce:
            return self.mode, *ids
        mode = state.mode & ~0o022
        uid, gid = (state.uid, state.gid) if state.uid in (0, ids[0]) else ids
        return self._readable(mode, uid, gid), uid, gid

    def _readable(self, mode: int, uid: int, gid: int) -> int:
        """``mode``, widened by the planned mode's read bits when ``readable_by``
        could not read the file with it (a managed-settings.json of mode 0000 or
        0600 would be a policy Claude never sees)."""
        if self.readable_by is None:
            return mode
        reader = lookup_user(self.readable_by, self.layout.root)
        if reader is not None and can_access(
            reader.uid, {reader.gid}, owner=uid, group=gid, mode=mode, want=READ
        ):
            return mode
        return mode | (self.mode & 0o644)

    def _attrs_wrong(self, state: fsops.FileState) -> bool:
        wanted = self._attrs_for(state)
        return wanted is not None and wanted != (state.mode, state.uid, state.gid)

    def is_change(self) -> bool:
        state = self.state()
        if state is None:
            return True
        return self.render(state.data) != state.data or self._attrs_wrong(state)

    def describe_change(self) -> str:
        verb = "create" if self.state() is None else "update"
        return f"{verb} {self.label} {self.path} (owner {self.owner}, mode {self.mode:04o})"

    def describe_existing(self) -> str:
        return f"{self.label} {self.path} already exists as planned"

    def diff(self) -> str:
        state = self.state()
        old = state.data if state else None
        new = self.render(old)
        if old == new:
            wanted = self._attrs_for(state) if state is not None else None
            if state is not None and wanted is not None and self._attrs_wrong(state):
                return (
                    f"{self.path}: mode/owner {state.mode:04o} {state.uid}:{state.gid} -> "
                    f"{wanted[0]:04o} {wanted[1]}:{wanted[2]}\n"
                )
            return ""
        if self.secret or self.binary:
            what = "secret content" if self.secret else "binary content"
            return (
                f"{self.path}: {what} differs (sha256 {fsops.sha256(old) or 'none'} -> "
                f"{fsops.sha256(new)}); not shown\n"
            )
        before = old.decode("utf-8", errors="replace").splitlines(keepends=True) if old else []
        after = new.decode("utf-8", errors="replace").splitlines(keepends=True)
        return "".join(
            difflib.unified_diff(
                before,
                after,
                fromfile=f"{self.path} (current)" if old is not None else "/dev/null",
                tofile=f"{self.path} (planned)",
            )
        )

    def apply(self, txn: Transaction) -> None:
        self.check_trusted()  # again: the plan checked it, but time has passed
        state = self.state()
        data = self.render(state.data if state else None)
        if state is not None and data == state.data and not self._attrs_wrong(state):
            return
        ids = self._owner_ids()
        wanted = self._attrs_for(state)
        if ids is None or wanted is None:
            raise SetupError(f"{self.path}: owner {self.owner} does not exist")
        mode, uid, gid = wanted
        dirs = fsops.DirSpec(self.dir_mode, *ids)
        # Missing parents first, each journaled before it exists, so undo (newest
        # first) removes the file before its directories.
        dfd = fsops.open_dir(
            self.layout.root, self.real.parent, create=dirs, before_mkdir=self._record_mkdir(txn)
        )
        if dfd is not None:
            os.close(dfd)
        backup = txn.backup(state.data, self.path.name) if state is not None else None
        keep = txn.keep_name(self.real) if state is not None else None
        old_sha = fsops.sha256(state.data) if state else None
        fix = {"fix": True} if txn.is_fix(str(self.path), old_sha, fsops.sha256(data)) else {}
        txn.record(
            {
                **fix,
                "op": "write",
                "target": str(self.path),
                "real": str(self.real),
                "old_sha256": fsops.sha256(state.data) if state else None,
                "new_sha256": fsops.sha256(data),
                "backup": backup,
                "keep": keep,
                "old_mode": state.mode if state else None,
                "old_uid": state.uid if state else None,
                "old_gid": state.gid if state else None,
                "tmp": fsops.temp_name(self.real),
            }
        )
        if keep is not None:
            # The old file stays linked beside the target until the commit: a
            # rollback puts it back by a rename, even on a full disk.
            txn.keep(self.real, keep)
        fsops.atomic_write(
            self.layout.root, self.real, data, mode=mode, uid=uid, gid=gid, dirs=dirs,
            before_rename=txn.before_rename,
        )  # fmt: skip

    def _record_mkdir(self, txn: Transaction) -> Callable[[Path], None]:
        def record(path: Path) -> None:
            target = "/" + str(path.relative_to(self.layout.root)) if not self.layout.live else path
            txn.record({"op": "mkdir", "real": str(path), "target": str(target)})

        return record


@dataclass(eq=False)
class RemoveFile(Action):
    """Remove a file an earlier apply installed (the claude shim no longer asked for),
    when ``ours`` says its content is that file. Journaled as ``remove-file`` (its
    bytes backed up, its mode and owner recorded): undo puts it back byte for byte.
    The removal itself is a rename beside the target (the restore point a rollback
    renames back), dropped at the commit."""

    layout: Layout
    path: PurePosixPath
    label: str
    ours: Callable[[bytes], bool]
    kind = "remove-file"

    @property
    def target(self) -> str:
        return str(self.path)

    @property
    def real(self) -> Path:
        return self.layout.real(self.path)

    def _state(self) -> fsops.FileState | None:
        state = fsops.read_file(self.layout.root, self.real)
        return state if state is not None and self.ours(state.data) else None

    def is_change(self) -> bool:
        return self._state() is not None

    def describe_change(self) -> str:
        return f"remove {self.label} {self.path} (undo puts it back)"

    def describe_existing(self) -> str:
        return f"{self.label} {self.path} is not installed"

    def backs_up(self) -> bool:
        return self.is_change()

    def diff(self) -> str:
        state = self._state()
        if state is None:
            return ""
        before = state.data.decode("utf-8", errors="replace").splitlines(keepends=True)
        return "".join(
            difflib.unified_diff(
                before, [], fromfile=f"{self.path} (current)", tofile="/dev/null (planned)"
            )
        )

    def apply(self, txn: Transaction) -> None:
        state = self._state()
        if state is None:
            return
        backup = txn.backup(state.data, self.path.name)
        keep = txn.keep_name(self.real)
        txn.record(
            {
                "op": "remove-file",
                "target": str(self.path),
                "real": str(self.real),
                "old_sha256": fsops.sha256(state.data),
                "backup": backup,
                "keep": keep,
                "old_mode": state.mode,
                "old_uid": state.uid,
                "old_gid": state.gid,
            }
        )
        txn.keep(self.real, keep, move=True)  # gone from its path: renamed beside it


@dataclass(eq=False)
class CreateWorkspace(Action):
    """Create a workspace that does not exist yet, as the operator asked (its owner and
    mode judged by :mod:`sandbox_setup.policy.new_workspace`). Missing parents are made
    root-owned 0755; each directory is journaled as ``mkdir`` before it exists, so
    ``--undo`` removes it only while it is empty (newest first: the workspace, then
    its parents)."""

    layout: Layout
    path: PurePosixPath
    owner: str
    mode: int
    kind = "create-directory"

    @property
    def target(self) -> str:
        return str(self.path)

    def is_change(self) -> bool:
        return not self.layout.real(self.path).is_dir()

    def describe_change(self) -> str:
        return (
            f"create the workspace {self.path} (owner {self.owner}, mode {self.mode:04o}; "
            "missing parents root's, 0755; undo removes it while it is empty)"
        )

    def describe_existing(self) -> str:
        return f"workspace {self.path} exists"

    def commands(self) -> list[list[str]]:
        real = str(self.layout.real(self.path))
        return [["install", "-d", "-o", self.owner, "-m", f"{self.mode:04o}", real]]

    def _record_mkdir(self, txn: Transaction) -> Callable[[Path], None]:
        def record(path: Path) -> None:
            target = "/" + str(path.relative_to(self.layout.root)) if not self.layout.live else path
            txn.record({"op": "mkdir", "real": str(path), "target": str(target)})

        return record

    def apply(self, txn: Transaction) -> None:
        if not self.is_change():
            return
        account = lookup_user(self.owner, self.layout.root)
        if account is None:
            raise SetupError(f"workspace {self.path}: owner {self.owner} does not exist")
        real = self.layout.real(self.path)
        record = self._record_mkdir(txn)
        # Parents as root's 0755 (the agent walks through, lists nothing it could not
        # list anyway); then the workspace itself with the owner and mode asked for.
        parents = fsops.DirSpec(PARENT_MODE, 0, 0)
        parent = fsops.open_dir(self.layout.root, real.parent, create=parents, before_mkdir=record)
        if parent is not None:
            os.close(parent)
        top = fsops.open_dir(
            self.layout.root,
            real,
            create=fsops.DirSpec(self.mode, account.uid, account.gid),
            before_mkdir=record,
        )
        if top is not None:
            os.close(top)


def members_text(layout: Layout, group: str) -> str:
    """``members: a, b`` (or ``no members``) of ``group`` as the target system has it
    now: the review shows who else a group it touches lets in."""
    members = users.group_members(group, layout.root)
    if not members:
        return "no members"
    return "members: " + ", ".join(members)


@dataclass(eq=False)
class CreateGroup(Action):
    layout: Layout
    name: str
    why: str = "workspace access"
    kind = "create-group"

    @property
    def target(self) -> str:
        return self.name

    def describe_change(self) -> str:
        return f"create group {self.name} ({self.why})"

    def describe_existing(self) -> str:
        return (
            f"group {self.name} already exists ({self.why}; {members_text(self.layout, self.name)})"
        )

    def is_change(self) -> bool:
        return users.group_gid(self.layout, self.name) is None

    def commands(self) -> list[list[str]]:
        return [users.groupadd_argv(self.layout, self.name)]

    def apply(self, txn: Transaction) -> None:
        with account_step(txn, self.layout, {"op": "create-group", "name": self.name}):
            users.run_tool(users.groupadd_argv(self.layout, self.name))


@dataclass(eq=False)
class CreateUser(Action):
    """The agent user: locked password, 0700 home, own group, workspace group."""

    layout: Layout
    name: str
    home: PurePosixPath
    groups: tuple[str, ...] = ()
    # Why an existing account may be the agent (shown instead of "create"): it is
    # the setup's own, or the operator reused it explicitly.
    existing_because: str = "created by sandbox-setup"
    kind = "create-user"

    @property
    def target(self) -> str:
        return self.name

    def describe_change(self) -> str:
        extra = f", member of {', '.join(self.groups)}" if self.groups else ""
        return (
            f"create user {self.name} (locked password, home {self.home} mode 0700, "
            f"own group{extra})"
        )

    def describe_existing(self) -> str:
        return message(
            f"user {self.name} already exists (", self.existing_because, "); it is the agent"
        )

    def is_change(self) -> bool:
        return not users.user_exists(self.layout, self.name)

    def commands(self) -> list[list[str]]:
        return [users.useradd_argv(self.layout, self.name, self.home, self.groups)]

    def apply(self, txn: Transaction) -> None:
        entry = {"op": "create-user", "name": self.name, "home": str(self.home)}
        with account_step(txn, self.layout, entry):
            users.run_tool(self.commands()[0])


@dataclass(eq=False)
class AddToGroup(Action):
    layout: Layout
    user: str
    group: str
    kind = "add-to-group"

    @property
    def target(self) -> str:
        return self.user

    def describe_change(self) -> str:
        return (
            f"add user {self.user} to group {self.group} ({members_text(self.layout, self.group)})"
        )

    def describe_existing(self) -> str:
        return f"user {self.user} is already in group {self.group}"

    def is_change(self) -> bool:
        members = users.group_members(self.group, self.layout.root)
        return members is None or self.user not in members

    def commands(self) -> list[list[str]]:
        return [users.add_to_group_argv(self.layout, self.user, self.group)]

    def apply(self, txn: Transaction) -> None:
        entry = {"op": "add-to-group", "user": self.user, "group": self.group}
        with account_step(txn, self.layout, entry):
            users.run_tool(self.commands()[0])


@dataclass(eq=False)
class LeaveGroup(Action):
    """Take the agent out of a group: the legacy ``sandbox-ws`` that every setup
    shared before each had its own (its other members could write this agent's
    workspaces, and it theirs). Undo puts it back."""

    layout: Layout
    user: str
    group: str
    why: str = "the workspace group every setup used to share"
    kind = "leave-group"

    @property
    def target(self) -> str:
        return self.user

    def describe(self) -> str:
        return (
            f"remove user {self.user} from group {self.group} ({self.why}; "
            f"{members_text(self.layout, self.group)})"
        )

    def is_change(self) -> bool:
        return self.user in (users.group_members(self.group, self.layout.root) or [])

    def commands(self) -> list[list[str]]:
        return [users.remove_from_group_argv(self.layout, self.user, self.group)]

    def apply(self, txn: Transaction) -> None:
        txn.record({"op": "remove-from-group", "user": self.user, "group": self.group})
        users.run_tool(self.commands()[0])


@dataclass(eq=False)
class SetShell(Action):
    """Give an agent this setup created the shell ``nologin``: one made by an older
    version kept a login shell, through which ``su`` or a console could start a
    process outside any session (:func:`sandbox_setup.policy.login_routes.
    has_login_shell`). Journaled as an account step (the account files byte for
    byte): undo puts the old shell back. Never planned for an account the setup did
    not create (the audit names that one instead)."""

    layout: Layout
    user: str
    old_shell: str
    shell: str = users.AGENT_SHELL
    kind = "set-shell"

    @property
    def target(self) -> str:
        return self.user

    def describe_change(self) -> str:
        return (
            f"set the shell of user {self.user} to {self.shell} (it has the login shell "
            f"{self.old_shell or '(none: /bin/sh)'} from an older version of this setup; su "
            "or a console login would start a process outside any session)"
        )

    def describe_existing(self) -> str:
        return f"user {self.user} already has the shell {self.shell}"

    def is_change(self) -> bool:
        account = lookup_user(self.user, self.layout.root)
        return account is not None and account.shell != self.shell

    def commands(self) -> list[list[str]]:
        return [users.set_shell_argv(self.layout, self.user, self.shell)]

    def apply(self, txn: Transaction) -> None:
        account = lookup_user(self.user, self.layout.root)
        if account is None or account.shell == self.shell:
            return
        entry = {"op": "set-shell", "user": self.user, "shell": self.shell,
                 "old_shell": account.shell}  # fmt: skip
        with account_step(txn, self.layout, entry):
            users.run_tool(self.commands()[0])


@dataclass(eq=False)
class WorkspaceAccess(Action):
    """Give ``group`` rwX on a workspace without chowning anything: an access ACL
    on every existing entry, a default ACL and the setgid bit on every directory
    (so new files inherit both). :func:`sandbox_setup.configure.plan.build_plan` refuses a
    workspace the agent could only reach by opening up a private directory."""

    layout: Layout
    workspace: PurePosixPath
    group: str
    agent: str | None = None  # the member the plan adds, shown with the current ones
    include_private: bool = False  # also open files private to their owner (--include-private)
    # What the walk leaves alone, found when planning ("stays private: 3 files, e.g. ...").
    left_alone: tuple[str, ...] = ()
    kind = "workspace-access"

    @property
    def target(self) -> str:
        return str(self.workspace)

    def _members(self) -> str:
        members = set(users.group_members(self.group, self.layout.root) or [])
        if self.agent:
            members.add(self.agent)
        return "members: " + ", ".join(sorted(members)) if members else "no members"

    def describe_change(self) -> str:
        text = (
            f"let group {self.group} ({self._members()}) read and write {self.workspace} "
            "(ACLs + default ACLs + setgid directories; owners unchanged)"
        )
        return "; ".join([text, *self.left_alone])

    def survey(self) -> WorkspaceAccess:
        """This action with :attr:`left_alone` filled in from the workspace as it is now."""
        top = fsops.open_dir(self.layout.root, self.layout.real(self.workspace))
        if top is None:
            return self
        try:
            report = users.survey_workspace(top, include_private=self.include_private)
        finally:
            os.close(top)
        return replace(self, left_alone=tuple(report.lines(self.workspace)))

    def describe_existing(self) -> str:
        text = f"group {self.group} ({self._members()}) can already read and write {self.workspace}"
        return "; ".join([text, *self.left_alone])

    def _qualifier(self) -> str:
        gid = users.group_gid(self.layout, self.group)
        return str(gid) if gid is not None else self.group

    def commands(self) -> list[list[str]]:
        ws = str(self.layout.real(self.workspace))
        q = self._qualifier()
        # The shell equivalent, for --dry-run. apply does the same walk by fd
        # (users.grant_workspace): no symlink, and no directory swapped for one
        # mid-walk, can lead it out of the workspace.
        return [
            ["setfacl", "-R", "-m", f"g:{q}:rwX", ws],
            ["setfacl", "-R", "-d", "-m", f"g:{q}:rwX", ws],
            ["find", ws, "-type", "d", "-exec", "chmod", "g+s", "{}", "+"],
        ]

    def is_change(self) -> bool:
        gid = users.group_gid(self.layout, self.group)
        if gid is None:
            return True
        real = self.layout.real(self.workspace)
        if not real.is_dir():
            return True  # created by an earlier step of the plan (CreateWorkspace)
        entries = users.acl_entries(real)
        wanted = {f"group:{gid}:rwx", f"default:group:{gid}:rwx", "mask::rwx"}
        if not wanted <= entries:  # a narrowed mask (chmod g-w) takes the access away
            return True
        return not os.stat(real).st_mode & 0o2000

    def apply(self, txn: Transaction) -> None:
        real = self.layout.real(self.workspace)
        gid = users.group_gid(self.layout, self.group)
        if gid is None:
            raise SetupError(f"group {self.group} does not exist")
        # open_dir refuses a workspace reached through a symlink someone else owns;
        # below it everything is walked by fd (see users.walk_workspace).
        top = fsops.open_dir(self.layout.root, real)
        if top is None:
            raise SetupError(f"workspace {self.workspace} does not exist")
        try:
            saved = json.dumps(users.acl_snapshot(top, gid), sort_keys=True)
            data = saved.encode("utf-8")
            backup = txn.backup(data, "workspace-acl.json")
            txn.record(
                {
                    "op": "acl",
                    "target": str(self.workspace),
                    "backup": backup,
                    "backup_sha256": fsops.sha256(data),
                }
            )
            users.grant_workspace(top, gid, include_private=self.include_private)
        finally:
            os.close(top)
