"""Issue 24: a generator of plants (hypothesis) against the end-of-session scan.

Each example builds a fresh workspace the way an operator has it (one
:class:`tests.git_plants.Slot`: a repository of root's with a commit, a linked
worktree, a root-made ``app/lib``, a local remote outside the workspace with a
newer commit), grants the agent (``nobody``) write access by ACL as the apply does,
takes the session-start snapshot, and then, as ``nobody`` on the host, writes a
random plant (:data:`tests.git_plants.plants`).

Then the scan and the quarantine run as the launcher's end does, and root runs
``status``, ``diff``, ``log``, ``commit``, ``checkout``, ``rebase --continue`` and
``pull`` from the local remote in every directory the layout concerns. No marker
may appear. Root's git has a clean HOME (no protected include of layer 1, but
``safe.directory = *``): the scan alone has to hold.

``test_workspace_generated_sessions.py`` has the agent write batches of the same
plants inside real sessions (both modes); this one is the faster, broader check of
the scan on its own (more examples, no read-only mounts in front of it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from sandbox_setup.boundary import quarantine
from sandbox_setup.boundary import scan as workspace_scan
from tests.git_plants import (
    LAYOUTS,
    NOBODY,
    RootGit,
    Slot,
    agent_script,
    control_plant,
    grant,
    plants,
)
from tests.integration.containers import make_workdir
from tests.tools import require_root, require_tool

pytestmark = pytest.mark.integration


class Example:
    """One fresh workspace (one slot), root's git environment and the markers."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.ws = base / "ws"
        self.markers = base / "markers"
        self.slot = Slot(
            RootGit(base / "root-home"), self.ws, base / "remote.git", self.markers, "s"
        )

    def setup(self) -> None:
        for d in (self.markers, self.ws):
            d.mkdir()
        self.markers.chmod(0o777)
        self.slot.setup()
        grant(self.ws)

    def plant(self, spec: dict[str, Any]) -> list[Path]:
        writes, where = self.slot.writes(spec)
        program = self.base / "plant.py"
        program.write_text(agent_script(writes))
        program.chmod(0o755)
        proc = subprocess.run(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             str(program)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        done = json.loads(proc.stdout.strip().splitlines()[-1])
        assert set(done) <= {"ok"}, list(zip(writes, done, strict=True))
        return where


@pytest.fixture(scope="module")
def fresh() -> Iterator[Callable[[], Example]]:
    """A factory of fresh examples: the workspace is built once, then copied back
    (``cp -a``: modes, owners, ACLs) to the same path before each example, so the
    absolute paths git wrote (the linked worktree's) stay right."""
    require_root()
    for tool in ("git", "setfacl", "setpriv", "cp"):
        require_tool(tool)
    if not Path("/usr/bin/python3").exists():
        pytest.skip("no /usr/bin/python3 to write the plants as nobody")
    top = make_workdir("ws-gen-")
    live, template = top / "live", top / "template"
    live.mkdir()
    Example(live).setup()
    subprocess.run(["cp", "-a", str(live), str(template)], check=True)

    def make() -> Example:
        shutil.rmtree(live)
        subprocess.run(["cp", "-a", str(template), str(live)], check=True)
        return Example(live)

    try:
        yield make
    finally:
        shutil.rmtree(top, ignore_errors=True)


@settings(
    max_examples=40,
    derandomize=True,  # CI runs the same examples every time
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(spec=plants)
def test_no_generated_plant_runs_as_root_after_the_end_scan(
    fresh: Callable[[], Example], spec: dict[str, Any]
) -> None:
    example = fresh()
    before = workspace_scan.Snapshot.from_json(workspace_scan.snapshot([str(example.ws)]).to_json())
    where = example.plant(spec)
    result = workspace_scan.scan([str(example.ws)], before)
    assert result.truncated == []
    done = quarantine.neutralize_all(result.hits, str(example.base / "state/q"))
    assert all(n.done for n in done), [n.line for n in done if not n.done]
    example.slot.review(where)
    fired = {p.name: p.read_text().strip() for p in example.markers.iterdir()}
    assert fired == {}, f"ran as root after the scan: {fired}; plant: {spec}"


def test_the_generator_plants_do_run_without_the_scan(fresh: Callable[[], Example]) -> None:
    """The control: the same kinds of plant, without the scan, run as root (so the
    generator above could fail). One fixed plant per layout: core.fsmonitor and a
    pre-commit hook, which git 2.39 runs on status and commit."""
    for layout in LAYOUTS:
        example = fresh()
        example.slot.review(example.plant(control_plant(layout)))
        owners = {p.stat().st_uid for p in example.markers.iterdir()}
        assert owners == {0}, f"{layout}: nothing ran as root ({owners})"
