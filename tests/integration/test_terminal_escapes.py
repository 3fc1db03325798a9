"""Nothing the agent names reaches root's terminal raw (docs/design.md invariant 15).

Names that set the window title (OSC 0), write the clipboard (OSC 52), clear the
screen, paint a fake green "nothing to report", reverse the text (U+202E), return
the cursor (a bare CR), start a C1 CSI, or are not UTF-8 at all:

- planted by a real session (both modes) as Claude Code hook scripts and in a
  settings file: the end-of-session scan moves them aside, and its lines on
  stderr are printable; the manifest keeps the exact names, and the restore
  command the line prints brings back the exact file under bash;
- in a real workspace and the egress decision log of an applied setup: the
  audit's text (stdout and stderr) is printable, ``--json`` has the exact names.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core_fixtures import REPO, run_cli
from tests.integration.test_audit_drift import Setup, make_setup
from tests.launch_fixtures import LaunchTree, launch_tree, launcher_env, run_launcher
from tests.tools import claude_binary, require_root

pytestmark = pytest.mark.integration

EVIL = {
    "title": "\x1b]0;pwned\x07",
    "clipboard": "\x1b]52;c;cHduZWQ=\x07",
    "clear": "\x1b[2J",
    "green": "\x1b[32mnothing to report\x1b[0m",
    "bidi": "gpj.\u202eexe",
    "cr": "real\rfake",
    "csi": "c1\u009b31m",
}
NOT_UTF8 = b"bytes\xff\x9b"
BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def assert_printable(output: str | bytes) -> None:
    """No byte below 0x20 but a newline, no DEL, no C1 control, no bidi control,
    and valid UTF-8 (a byte that was not is shown as an escape)."""
    data = output.encode() if isinstance(output, str) else output
    text = data.decode("utf-8")  # strict: raises on a raw non-UTF-8 byte
    bad = [
        (i, hex(ord(c)))
        for i, c in enumerate(text)
        if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F or c in BIDI
    ]
    assert not bad, (bad[:5], text[max(0, bad[0][0] - 80) : bad[0][0] + 80])


# --- the end-of-session scan, in a real session ------------------------------------

PLANT = r"""#!/usr/bin/python3
import json, os, sys
WS = {workspace!r}
NAMES = {names!r}
hooks = os.path.join(WS, ".claude", "hooks")
os.makedirs(hooks, exist_ok=True)
done = {{}}
for name in NAMES:
    path = os.path.join(os.fsencode(hooks), name.encode("utf-8", "surrogateescape"))
    try:
        with open(path, "w") as f:
            f.write("#!/bin/sh\nid -u\n")
        done[name.encode("utf-8", "surrogateescape").hex()] = "ok"
    except OSError as exc:
        done[name.encode("utf-8", "surrogateescape").hex()] = exc.strerror
with open(os.path.join(WS, ".claude", "settings.json"), "w") as f:
    json.dump({{"hooks": {{"SessionStart": [{{"hooks": [
        {{"type": "command", "command": NAMES[0] + " " + NAMES[3]}}]}}]}}}}, f)
print(json.dumps(done), flush=True)
"""


@pytest.fixture
def tree() -> Iterator[LaunchTree]:
    yield from launch_tree("bash")


@pytest.mark.parametrize("mode", ["sandbox", "user"])
def test_the_end_scan_prints_planted_names_escaped(tree: LaunchTree, mode: str) -> None:
    ws = tree.workspace
    os.chown(ws, 0, 0)
    ws.chmod(0o755)
    agent = tree.agent.name
    subprocess.run(["setfacl", "-R", "-m", f"u:{agent}:rwX,d:u:{agent}:rwX", str(ws)], check=True)
    names = [*EVIL.values(), os.fsdecode(NOT_UTF8)]
    script = tree.write_script(PLANT.format(workspace=str(ws), names=names))
    state = tree.base / "state"
    result = run_launcher(
        tree.write_config(script, mode=mode), env=launcher_env({"XDG_STATE_HOME": str(state)})
    )
    assert result.returncode == 0, result.stderr
    planted = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(planted.values()) == {"ok"}, planted
    assert_printable(result.stdout + result.stderr)
    told = result.stderr
    for shown in ("\\x1b]0;pwned\\x07", "\\x1b]52;c;", "\\x1b[2J", "\\x1b[32mnothing to",
                  "gpj.\\u202eexe", "real\\rfake", "c1\\u009b31m", "bytes\\xff\\x9b"):  # fmt: skip
        assert shown in told, (shown, told)
    # The manifest keeps every name exactly; the quarantine holds the very files.
    manifests = list((state / "sandbox-setup" / "quarantine").glob("*/manifest.json"))
    assert len(manifests) == 1, told
    entries = json.loads(manifests[0].read_text())["entries"]
    originals = {e["original"] for e in entries}
    for name in names:
        assert os.path.join(str(ws), ".claude", "hooks", name) in originals, originals
        assert not os.path.lexists(os.fsencode(ws / ".claude" / "hooks") + b"/" + os.fsencode(name))
    # The restore command the line prints is printable and brings back the exact file.
    entry = next(e for e in entries if e["original"].endswith(EVIL["title"]))
    assert entry["restore"] in told
    subprocess.run(["bash", "-c", entry["restore"]], check=True, env={"LC_ALL": "C"})
    assert os.path.isfile(entry["original"])


# --- the audit: workspace findings and the egress log ------------------------------


@pytest.fixture
def setup(integration_workdir: Path) -> Iterator[Setup]:
    require_root()
    for tool in ("useradd", "setfacl", "bwrap", "setpriv"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    made = make_setup(
        integration_workdir, claude_binary(), "--mode", "sandbox", "--workspace", "/srv/project"
    )
    yield made
    shutil.rmtree(made.root.parent, ignore_errors=True)


def plant_for_the_audit(setup: Setup) -> Path:
    ws = setup.real("/srv/project")
    hooks = ws / ".claude" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    for name in EVIL.values():
        (hooks / name).write_text("#!/bin/sh\n")
    with open(os.fsencode(hooks) + b"/" + NOT_UTF8, "w") as f:
        f.write("#!/bin/sh\n")
    git = ws / ".git"
    for sub in ("objects", "refs"):
        (git / sub).mkdir(parents=True, exist_ok=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "config").write_text(f'[core]\n\tfsmonitor = "{EVIL["title"]}{EVIL["clear"]}"\n')
    # The egress proxy's decision log, as its server writes it (one JSON object a line).
    log = setup.real(str(setup.layout.state_dir / "egress.log"))
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as f:
        for target in (EVIL["title"], EVIL["green"], EVIL["bidi"], "host\nforged line"):
            entry = {"event": "decision", "protocol": "connect", "host": target, "port": 443,
                     "addresses": [], "allowed": False, "rule": "not in the allowlist",
                     "message": f"{target}: refused", "time": "2026-01-01T00:00:00Z"}  # fmt: skip
            f.write(json.dumps(entry, sort_keys=True) + "\n")
    return ws


def test_the_audit_prints_workspace_names_and_egress_targets_escaped(setup: Setup) -> None:
    ws = plant_for_the_audit(setup)
    text = subprocess.run(
        [sys.executable, "-m", "sandbox_setup", "--audit", "--root", str(setup.root)],
        cwd=REPO,
        capture_output=True,  # bytes: a raw byte that is not UTF-8 would show
        check=False,
        stdin=subprocess.DEVNULL,
        timeout=240,
    )
    assert text.returncode in (0, 1), text.stderr
    assert_printable(text.stdout + text.stderr)
    out = text.stdout.decode()
    assert "\\x1b]0;pwned\\x07" in out and "\\x1b[2J" in out  # the name and the value
    assert "\\x1b[32mnothing to report\\x1b[0m:443" in out  # the egress target
    assert "host\\nforged line:443" in out  # one report line, not two
    assert not any(line.startswith("forged line") for line in out.splitlines())
    assert "bytes\\xff\\x9b" in out
    # --json keeps the exact names.
    done = run_cli("--audit", "--json", "--root", str(setup.root))
    data = json.loads(done.stdout)
    summaries = "\n".join(f["summary"] for f in data["findings"])
    for name in EVIL.values():
        assert str(ws / ".claude" / "hooks" / name) in summaries, name
    assert os.fsdecode(NOT_UTF8) in summaries
    network = "\n".join(data["network"])
    assert f"{EVIL['green']}:443" in network and f"{EVIL['title']}:443" in network
