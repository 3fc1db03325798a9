"""A whole ``--root`` tree on a small tmpfs that is full but for ``leave`` bytes.

Used as ``unshare --mount --propagation private python -m tests.faults.tmpfs_root SPEC``
(see :func:`run_on_full_tmpfs`), so the tmpfs exists only in that one mount
namespace (it is unmounted at the end, and would vanish with the namespace anyway);
the host's mount table never changes. ``SPEC`` is JSON:

- ``dir``: an empty directory (in the test's temp dir) to mount the tmpfs on;
- ``seed``: a prepared target root, copied onto the tmpfs as ``dir/root`` (modes,
  owners, ACLs kept);
- ``leave``: bytes left free after filling the tmpfs (0: every write fails);
- ``apply`` and ``undo``: the two commands; ``{root}`` in them is replaced by the
  root on the tmpfs. The apply runs on the full tmpfs; then the filler is removed
  ("once space is free") and the undo runs.

It prints one JSON object: ``apply`` and ``undo`` (each ``rc``, ``stdout``,
``stderr``), and the tree (:func:`tests.core_fixtures.snapshot` plus the workspace
ACLs) ``before`` the apply, ``after_apply`` and ``after_undo``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.core_fixtures import snapshot

FILLER = ".disk-filler"
STATE_PREFIX = "root/.local/"  # the operator's journal and backups: allowed to differ


def tree(root: Path) -> dict[str, Any]:
    state: dict[str, Any] = {
        path: list(value)
        for path, value in snapshot(root).items()
        if not path.startswith(STATE_PREFIX)
    }
    acls = subprocess.run(
        ["getfacl", "-R", "--numeric", "--absolute-names", str(root / "srv")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    state["<acl srv>"] = acls.replace(str(root), "<root>")
    return state


def fill(directory: Path, leave: int) -> None:
    with open(directory / FILLER, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError:
            pass
    size = (directory / FILLER).stat().st_size
    os.truncate(directory / FILLER, max(0, size - leave))


def run(argv: list[str], root: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [part.replace("{root}", str(root)) for part in argv],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=240,
    )
    return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


def main(spec: dict[str, Any]) -> dict[str, Any]:
    mount = Path(spec["dir"])
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={spec.get('size', '1m')},mode=0755", "tmpfs",
         str(mount)],
        check=True,
    )  # fmt: skip
    try:
        subprocess.run(["cp", "-a", spec["seed"], str(mount / "root")], check=True)
        root = mount / "root"
        result: dict[str, Any] = {"before": tree(root)}
        fill(mount, int(spec["leave"]))
        result["apply"] = run(spec["apply"], root)
        result["after_apply"] = tree(root)
        (mount / FILLER).unlink()
        result["undo"] = run(spec["undo"], root)
        result["after_undo"] = tree(root)
        return result
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def run_on_full_tmpfs(spec: dict[str, Any]) -> dict[str, Any]:
    """Run ``spec`` in a fresh private mount namespace; see the module doc."""
    repo = Path(__file__).resolve().parent.parent.parent
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--",
         sys.executable, "-m", "tests.faults.tmpfs_root", json.dumps(spec)],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )  # fmt: skip
    if done.returncode != 0:
        raise AssertionError(f"tmpfs helper failed: {done.stdout}{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
