"""Run ``sandbox-setup`` in a private mount namespace with a fault mounted in place.

Used as ``unshare --mount --propagation private python -m tests.faults.namespace SPEC``
(see :func:`run_in_namespace`), so the mounts exist only for that one run and the
host's mount table never changes. ``SPEC`` is JSON:

- ``mounts``: ``{"dir", "kind": "tmpfs-full"}`` mounts a small tmpfs over ``dir``
  with ``dir``'s files copied in (mode and owner kept), then fills it to ENOSPC
  (``"leave": N`` then frees N bytes again);
  ``{"dir", "kind": "read-only"}`` bind-mounts ``dir`` over itself read-only;
  ``{"dir", "kind": "bind", "source"}`` bind-mounts ``source`` over ``dir`` (a
  ``--root`` tree's accounts and homes shown where the live launcher looks);
- ``argv``: the command to run (the CLI);
- ``env``: added to the environment.

It prints one JSON object: the command's ``rc``, ``stdout``, ``stderr``, and, for
each tmpfs (whose contents vanish with the namespace), a listing of its files
``{relative path: sha256}`` taken before and after the command.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

FILLER = ".disk-filler"


def listing(directory: Path) -> dict[str, str]:
    found = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.is_symlink():
            found[str(path.relative_to(directory))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def mount_full_tmpfs(directory: Path, leave: int = 0) -> None:
    staging = Path(tempfile.mkdtemp(prefix="fault-staging-"))
    try:
        shutil.copytree(directory, staging / "copy", symlinks=True)
        st = directory.stat()
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size=64k,mode={st.st_mode & 0o7777:o}", "tmpfs",
             str(directory)],
            check=True,
        )  # fmt: skip
        os.chown(directory, st.st_uid, st.st_gid)
        for item in (staging / "copy").iterdir():
            subprocess.run(["cp", "-a", str(item), str(directory)], check=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    # Fill every last block: the next write of any size fails with ENOSPC.
    with open(directory / FILLER, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 512)
        except OSError:
            pass
    if leave:  # give back ``leave`` bytes: room for a little, not for everything
        os.truncate(directory / FILLER, max(0, (directory / FILLER).stat().st_size - leave))


def mount_read_only(directory: Path) -> None:
    subprocess.run(["mount", "--bind", str(directory), str(directory)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(directory)], check=True)


def main(spec: dict[str, Any]) -> dict[str, Any]:
    tmpfs = []
    for mount in spec["mounts"]:
        directory = Path(mount["dir"])
        if mount["kind"] == "tmpfs-full":
            mount_full_tmpfs(directory, int(mount.get("leave", 0)))
            tmpfs.append(directory)
        elif mount["kind"] == "read-only":
            mount_read_only(directory)
        elif mount["kind"] == "bind":
            subprocess.run(["mount", "--bind", mount["source"], str(directory)], check=True)
        else:
            raise ValueError(f"unknown mount kind {mount['kind']!r}")
    before = {str(d): listing(d) for d in tmpfs}
    proc = subprocess.run(
        spec["argv"],
        env={**os.environ, **spec.get("env", {})},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=240,
    )
    after = {str(d): listing(d) for d in tmpfs}
    return {
        "rc": proc.returncode,
        "stdout": proc.stdout,
        "stderr": proc.stderr,
        "before": before,
        "after": after,
    }


def run_in_namespace(
    mounts: list[dict[str, object]], argv: list[str], env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``argv`` with ``mounts`` in a fresh private mount namespace; see the module doc."""
    repo = Path(__file__).resolve().parent.parent.parent
    spec = json.dumps({"mounts": mounts, "argv": argv, "env": env or {}})
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--",
         sys.executable, "-m", "tests.faults.namespace", spec],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )  # fmt: skip
    if done.returncode != 0:
        raise AssertionError(f"namespace helper failed: {done.stdout}{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
