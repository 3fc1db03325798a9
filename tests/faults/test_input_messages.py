"""Inputs of issue 26 that were taken silently or answered in Python's words: each is
now refused with exit 2 naming it, or printed in plain words, through the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.core_fixtures import SANDBOX, make_target_root, run_cli, snapshot
from tests.faults.conftest import FaultRow
from tests.tools import require_root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    require_root()
    return make_target_root(tmp_path / "root")


def _no_crash(stderr: str) -> None:
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr


def test_a_claude_script_with_a_crlf_shebang_is_refused(fault: FaultRow, root: Path) -> None:
    fault.expect("--claude script saved with CRLF (#!/bin/sh\\r)", "exit 2 naming it and the fix")
    script = root / "opt/claude-crlf"
    script.parent.mkdir(parents=True)
    script.write_bytes(b'#!/bin/sh\r\necho "2.1.197 (Claude Code)"\r\n')
    script.chmod(0o755)
    before = snapshot(root)
    for extra in ([], ["--yes"]):
        result = run_cli(
            "--headless", *SANDBOX, "--claude", "/opt/claude-crlf", "--root", str(root), *extra
        )
        fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-140:]}")
        assert result.returncode == 2, result.stderr
        assert "/opt/claude-crlf: its #! line ends in a carriage return" in result.stderr
        assert f"sed -i 's/[[:cntrl:]]$//' {script}" in result.stderr
        _no_crash(result.stderr)
    assert snapshot(root) == before


@pytest.mark.parametrize(
    ("content", "said"),
    [(b"", "it is empty"), (b"garbage\x00\x01", "it is neither a program (ELF) nor a #! script")],
    ids=["empty", "garbage"],
)
def test_an_empty_or_garbage_claude_is_refused(
    fault: FaultRow, root: Path, content: bytes, said: str
) -> None:
    fault.expect(
        f"--claude naming an executable file holding {content!r}",
        "exit 2 naming it at plan and apply (every launch would fail)",
    )
    script = root / "opt/claude-bad"
    script.parent.mkdir(parents=True)
    script.write_bytes(content)
    script.chmod(0o755)
    before = snapshot(root)
    for extra in ([], ["--yes"]):
        result = run_cli(
            "--headless", *SANDBOX, "--claude", "/opt/claude-bad", "--root", str(root), *extra
        )
        fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-140:]}")
        assert result.returncode == 2, result.stderr
        assert f"/opt/claude-bad: {said}" in result.stderr, result.stderr
        _no_crash(result.stderr)
    assert snapshot(root) == before


def test_undo_json_is_refused_clearly(fault: FaultRow, root: Path) -> None:
    fault.expect("--undo --json", "exit 2: --undo has no --json output")
    result = run_cli("--undo", "--json", "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    assert result.returncode == 2
    assert "--undo has no --json output" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("domain", "rule"),
    [
        ("127.0.0.1", "loopback"),
        ("127.0.0.53:53", "loopback"),
        ("[::1]", "loopback"),
        ("localhost:8080", "loopback"),
        ("db.localhost", "loopback"),
        ("169.254.169.254", "cloud metadata"),
        ("metadata.google.internal", "cloud metadata"),
        ("169.254.10.1", "link-local"),
        ("[fe80::1]", "link-local"),
        ("10.1.2.3", "private"),
        ("192.168.1.10:443", "private"),
        ("172.16.0.1", "private"),
        ("[fd00::1]", "private"),
    ],
)
def test_the_plan_warns_of_an_allowance_into_this_host_or_network(
    fault: FaultRow, root: Path, domain: str, rule: str
) -> None:
    fault.expect(f"--allow-domain {domain}", f"a warning line naming it as {rule}, and in --json")
    argv = ("--headless", *SANDBOX, "--allow-domain", domain, "--allow-domain", "example.com")
    text = run_cli(*argv, "--root", str(root))
    assert text.returncode == 0, text.stderr
    warnings = [line for line in text.stderr.splitlines() if line.startswith("warning: ")]
    fault.saw(warnings[0][:140] if warnings else "no warning")
    assert len(warnings) == 1, text.stderr
    assert f" is {rule}: the agent can reach it" in warnings[0]
    data = json.loads(run_cli(*argv, "--json", "--root", str(root)).stdout)
    assert len(data["warnings"]) == 1 and f" is {rule}: " in data["warnings"][0]


def test_a_public_allowance_has_no_warning(root: Path) -> None:
    argv = ("--headless", *SANDBOX, "--allow-domain", "203.0.113.7", "--allow-domain", "x.org")
    data = json.loads(run_cli(*argv, "--json", "--root", str(root)).stdout)
    assert data["warnings"] == []


def test_no_enum_repr_reaches_a_message(fault: FaultRow, root: Path) -> None:
    fault.expect("--mode user --network allowlist", "exit 2 in plain words, no <Network...>")
    result = run_cli(
        "--headless", "--mode", "user", "--network", "allowlist", "--workspace", "/srv/project",
        "--root", str(root),
    )  # fmt: skip
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    assert result.returncode == 2
    assert "network 'allowlist' needs sandbox mode" in result.stderr
    assert "<Network" not in result.stderr and "<Mode" not in result.stderr


def test_a_newline_in_a_pass_env_name_is_refused_escaped(fault: FaultRow, root: Path) -> None:
    fault.expect("--pass-env 'FOO<newline>BAR'", "exit 2, the name escaped on one line")
    result = run_cli("--headless", *SANDBOX, "--pass-env", "FOO\nBAR", "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "pass_env 'FOO\\\\nBAR': not an environment variable name" in result.stderr


def test_a_doubled_slash_workspace_is_normalised(fault: FaultRow, root: Path) -> None:
    fault.expect("--workspace //srv//project", "the plan for /srv/project, no symlink talk")
    result = run_cli("--headless", "--mode", "sandbox", "--workspace", "//srv//project",
                     "--root", str(root))  # fmt: skip
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-100:]}")
    assert result.returncode == 0, result.stderr
    assert "symlink" not in result.stderr
    assert "read and write /srv/project" in result.stdout


@pytest.mark.parametrize(
    ("domain", "words"),
    [
        (" example.com", "white space around it"),
        ("example.com ", "white space around it"),
        ("exa mple.com", "contains white space"),
        ("[fe80::1%eth0]", "an IPv6 zone id"),
        ("[fe80::1%eth0]:443", "an IPv6 zone id"),
        ("fe80::1%eth0", "an IPv6 zone id"),
    ],
)
def test_allow_domain_with_spaces_or_a_zone_id_is_refused(
    fault: FaultRow, root: Path, domain: str, words: str
) -> None:
    fault.expect(f"--allow-domain {domain!r}", "exit 2 naming it, nothing written")
    before = snapshot(root)
    result = run_cli("--headless", *SANDBOX, "--allow-domain", domain, "--yes", "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    assert result.returncode == 2, result.stderr
    assert f"allowed domain {domain!r}: {words}" in result.stderr
    assert snapshot(root) == before


def test_accept_unsafe_root_in_a_sandbox_answers_file_is_refused(
    fault: FaultRow, root: Path
) -> None:
    fault.expect("answers: mode = sandbox, accept_unsafe_root = true", "exit 2 like the CLI")
    answers = root.parent / "answers.toml"
    answers.write_text(
        'schema = 1\nmode = "sandbox"\nworkspaces = ["/srv/project"]\naccept_unsafe_root = true\n'
    )
    before = snapshot(root)
    result = run_cli("--headless", "--answers", str(answers), "--yes", "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    assert result.returncode == 2, result.stderr
    assert 'accept_unsafe_root only applies to mode "unsafe"' in result.stderr
    assert str(answers) in result.stderr
    assert snapshot(root) == before


def test_accepted_at_that_is_not_a_time_is_refused(fault: FaultRow, root: Path) -> None:
    fault.expect('answers: mode = unsafe, accepted_at = "x"', "exit 2 naming the key, not recorded")
    answers = root.parent / "answers.toml"
    answers.write_text(
        'schema = 1\nmode = "unsafe"\nworkspaces = ["/srv/project"]\naccept_unsafe_root = true\n'
        'accepted_at = "x"\n'
    )
    before = snapshot(root)
    result = run_cli("--headless", "--answers", str(answers), "--yes", "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    assert result.returncode == 2, result.stderr
    assert f"{answers}: key 'accepted_at' is 'x'; expected a date and time" in result.stderr
    assert snapshot(root) == before


def test_a_byte_order_mark_is_named_not_an_invalid_statement(fault: FaultRow, root: Path) -> None:
    fault.expect("answers file saved as UTF-8 with BOM", "exit 2 naming the mark and the fix")
    answers = root.parent / "answers.toml"
    answers.write_bytes(
        b'\xef\xbb\xbfschema = 1\nmode = "sandbox"\nworkspaces = ["/srv/project"]\n'
    )
    before = snapshot(root)
    result = run_cli("--headless", "--answers", str(answers), "--yes", "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    assert result.returncode == 2, result.stderr
    assert f"{answers}: starts with a byte-order mark" in result.stderr, result.stderr
    assert "Invalid statement" not in result.stderr
    _no_crash(result.stderr)
    assert snapshot(root) == before


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--no-allow-domain", "exampel.org"),
        ("--no-workspace", "/srv/projcet"),
        ("--no-pass-env", "MY_TOKN"),
        ("--no-allow-loopback-port", "10101"),
    ],
)
def test_a_no_option_naming_what_the_setup_lacks_is_refused(
    fault: FaultRow, root: Path, flag: str, value: str
) -> None:
    fault.expect(f"{flag} {value} (a typo) on a saved setup", "exit 2 naming it, nothing written")
    first = run_cli(
        "--headless", *SANDBOX, "--allow-domain", "example.org", "--pass-env", "MY_TOKEN",
        "--allow-loopback-port", "10100", "--yes", "--root", str(root),
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    before = snapshot(root)
    result = run_cli("--headless", flag, value, "--yes", "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    assert result.returncode == 2, result.stderr
    assert f"{flag} '{value}': the setup does not have it" in result.stderr, result.stderr
    assert snapshot(root) == before


@pytest.mark.parametrize(
    ("key", "line"),
    [
        ("mode", 'mode = "{big}"'),
        ("agent_user", 'mode = "sandbox"\nworkspaces = ["/srv/project"]\nagent_user = "{big}"'),
        ("allowed_domains", 'mode = "sandbox"\nworkspaces = ["/srv/project"]\n'
         'allowed_domains = ["{big}!"]'),
        ("unknown key", 'mode = "sandbox"\nworkspaces = ["/srv/project"]\n{big} = 1'),
        ("claude", 'mode = "sandbox"\nworkspaces = ["/srv/project"]\nclaude = "/{big}"'),
    ],
)  # fmt: skip
def test_a_20_mb_bad_value_is_not_echoed_in_full(
    fault: FaultRow, root: Path, key: str, line: str
) -> None:
    fault.expect(f"answers: a 20 MB bad {key}", "exit 2, one short line naming the key")
    answers = root.parent / "answers.toml"
    answers.write_text("schema = 1\n" + line.replace("{big}", "x" * 20_000_000) + "\n")
    result = run_cli("--headless", "--answers", str(answers), "--root", str(root))
    fault.saw(f"exit {result.returncode}: {len(result.stderr)} characters on stderr")
    assert result.returncode == 2, result.stderr[:500]
    assert len(result.stderr) < 5000, result.stderr[:500]
    assert str(answers) in result.stderr
    _no_crash(result.stderr)


def test_claude_as_an_absolute_symlink_inside_the_root_is_the_targets(
    fault: FaultRow, root: Path
) -> None:
    fault.expect(
        "--claude /opt/claude, a symlink to /usr/local/bin/claude inside --root",
        "the target's binary (the link read inside the root): plan exit 0",
    )
    (root / "opt").mkdir(exist_ok=True)
    (root / "opt/claude").symlink_to("/usr/local/bin/claude")
    result = run_cli("--headless", *SANDBOX, "--claude", "/opt/claude", "--root", str(root))
    fault.saw(f"exit {result.returncode}: {result.stderr.strip()[-120:]}")
    assert result.returncode == 0, result.stderr
    assert "not a file under" not in result.stderr


def test_the_plan_under_root_never_runs_the_hosts_claude(
    fault: FaultRow, root: Path, tmp_path: Path
) -> None:
    """The probes' ``claude --version`` under ``--root`` is the root's binary, never
    the first ``claude`` on the operator's PATH."""
    fault.expect("plan under --root with a claude on the operator's PATH", "that one never runs")
    marks = Path(tempfile.mkdtemp(prefix="sandbox-setup-h35b-", dir="/var/tmp"))
    try:
        marks.chmod(0o1777)
        host = tmp_path / "bin"
        host.mkdir()
        (host / "claude").write_text(f'#!/bin/sh\ntouch {marks}/ran\necho "2.1.197"\n')
        (host / "claude").chmod(0o755)
        result = run_cli(
            "--headless", *SANDBOX, "--root", str(root),
            env={"PATH": f"{host}:{os.environ['PATH']}"},
        )  # fmt: skip
        fault.saw(f"exit {result.returncode}; host claude ran: {(marks / 'ran').exists()}")
        assert result.returncode == 0, result.stderr
        assert not (marks / "ran").exists(), "the plan ran the host's claude"
    finally:
        shutil.rmtree(marks, ignore_errors=True)
