"""Property test of ``sandbox-launch --dry-run`` over generated ``launcher.toml``
files: a valid config one key away from the real thing, or arbitrary text. The
launcher either prints the command (exit 0) or refuses with one line naming the
problem (exit 3, 2 only for usage); never a traceback, and it starts nothing."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomlkit
from hypothesis import event, given
from hypothesis import strategies as st

from tests.property.conftest import PURE_SETTINGS
from tests.tools import require_root, require_tool

scalar: st.SearchStrategy[object] = (
    st.text(max_size=10) | st.integers(-2, 2) | st.booleans() | st.floats(allow_nan=False)
)
top = {
    "schema": st.sampled_from([1, 2, "1"]) | scalar,
    "mode": st.sampled_from(["sandbox", "user", "unsafe", "root", ""]) | scalar,
    "claude": st.sampled_from(["/usr/bin/true", "/nope", "true", "/tmp", ""]) | scalar,
    "claude_version": scalar,
    "surprise": scalar,
}
agent = {
    "user": st.sampled_from(["nobody", "root", "no-such-user", "", "Bad Name"]) | scalar,
    "home": st.sampled_from(["/nonexistent", "home", "/"]) | scalar,
}
sandbox = {
    "workspaces": st.lists(st.sampled_from(["/srv", "/tmp", "rel", "/etc", ""]), max_size=2)
    | scalar,
    "network": st.sampled_from(["host", "none", "bridge"]) | scalar,
    "inner_sandbox": st.sampled_from(["strong", "weak", "off", "on"]) | scalar,
}
unsafe = {
    "accepted_by": scalar,
    "accepted_at": scalar,
    "statement": scalar,
}
TABLES: dict[str, dict[str, st.SearchStrategy[object]]] = {
    "": top, "agent": agent, "sandbox": sandbox, "unsafe": unsafe,
}  # fmt: skip


@st.composite
def configs(draw: st.DrawFn, base: dict[str, object]) -> str:
    doc: dict[str, object] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    table = draw(st.sampled_from(sorted(TABLES)))
    key = draw(st.none() | st.sampled_from(sorted(TABLES[table])))
    if key is not None:
        target = doc if table == "" else doc.setdefault(table, {})
        if draw(st.booleans()) and isinstance(target, dict) and key in target:
            del target[key]
        elif isinstance(target, dict):
            target[key] = draw(TABLES[table][key])
    return tomlkit.dumps(doc)


@pytest.fixture(scope="module")
def trusted_dir() -> Iterator[Path]:
    """A root-owned 0755 directory with an agent home and a workspace in it."""
    require_root()
    for tool in ("bwrap", "setpriv"):
        require_tool(tool)
    base = Path(tempfile.mkdtemp(prefix="prop-launch-"))
    base.chmod(0o755)
    for name in ("home", "workspace"):
        (base / name).mkdir()
        os.chown(base / name, 65534, 65534)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def base_config(base: Path) -> dict[str, object]:
    return {
        "schema": 1,
        "mode": "sandbox",
        "claude": "/usr/bin/true",
        "agent": {"user": "nobody", "home": str(base / "home")},
        "sandbox": {
            "workspaces": [str(base / "workspace")],
            "network": "host",
            "inner_sandbox": "strong",
        },
    }


@PURE_SETTINGS
@given(data=st.data())
def test_launcher_dry_run_over_generated_configs(trusted_dir: Path, data: st.DataObject) -> None:
    from sandbox_setup.launcher.main import main

    text = data.draw(configs(base_config(trusted_dir)) | st.text(max_size=60))
    config = trusted_dir / "launcher.toml"
    config.write_text(text)
    config.chmod(0o644)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--dry-run", "--config", str(config)])
    event(f"exit {code}")
    assert "Traceback" not in err.getvalue()
    # 2 only for the one usage error a valid config can meet: several workspaces and
    # the caller in none of them (the launcher does not guess).
    workdir_rule = "which is in none of the workspaces" in err.getvalue()
    assert code in (0, 3) or (code == 2 and workdir_rule), (code, err.getvalue())
    if code == 0:
        assert out.getvalue().startswith("# sandbox-launch --dry-run"), out.getvalue()
        tomllib.loads(text)  # only a parseable config gets this far
    else:
        lines = [line for line in err.getvalue().splitlines() if line]
        assert lines and lines[-1].startswith("sandbox-launch: refused: "), err.getvalue()
    assert sorted(os.listdir(trusted_dir / "workspace")) == [], "dry-run started something"
