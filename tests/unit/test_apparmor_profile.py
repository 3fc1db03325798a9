"""The AppArmor profile for bwrap (issue 29): its text, checked with the real
``apparmor_parser`` (Debian's ``apparmor``; ``-Q -K``: this kernel has no AppArmor),
and how the plan offers it, installs it on request and records it in the answers.

Debian 12's parser is AppArmor 3.0: it knows neither ``abi <abi/4.0>`` (no such abi
file) nor the ``userns,`` rule, which need AppArmor 4 (Ubuntu 24.04, where the
restriction exists). So on a 3.x parser the test checks the exact bytes the plan writes
fail only at those lines: with an include directory offering ``abi/4.0`` (a copy of
``abi/3.0``) the parser stops at the ``userns,`` line, and the same bytes without that
one line parse. With a 4.x parser the exact bytes must parse as they are.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath

import pytest

from sandbox_setup.base.apparmor import (
    APPARMOR4_LINES,
    PROFILE_FILE,
    attach_problem,
    attaches_to,
    render_profile,
)
from sandbox_setup.base.choices import Mode
from sandbox_setup.base.errors import InputError, RefusedError
from sandbox_setup.base.paths import Layout
from sandbox_setup.checks.causes import cause_apparmor
from sandbox_setup.checks.facts import gather_host_facts
from sandbox_setup.checks.model import Finding, Recommendation, Report, Status
from sandbox_setup.configure.answers import Answers, dump_answers, parse_answers
from sandbox_setup.configure.apparmor import APPARMOR_KIND, AppArmorProfile
from sandbox_setup.configure.plan import build_plan
from tests.core_fixtures import make_target_root, snapshot
from tests.host_facts import plan_facts
from tests.tools import require_tool
from tests.unit.fixtures.trees import (
    UBUNTU_2404_SHIPPED_SYSCTLS,
    UBUNTU_2604_SYSCTLS,
    fixture_text,
    make_root,
)

WS = (PurePosixPath("/srv/project"),)
BWRAP = "/usr/bin/bwrap"
DOCUMENTED = [  # Ubuntu's documented form, with this project's profile name
    "abi <abi/4.0>,",
    "include <tunables/global>",
    f"profile sandbox-setup-bwrap {BWRAP} flags=(unconfined) {{",
    "  userns,",
    "  include if exists <local/sandbox-setup-bwrap>",
    "}",
]


def restricted_report(*, restricted: bool = True, check: str = "userns.policy") -> Report:
    """What the probes report on Ubuntu 24.04 without a bwrap profile (the cause line
    is what the checks write, here on ``check``), or on a host without the restriction."""
    cause = "\ncause: apparmor-userns-restricted" if restricted else ""
    status = Status.FAIL if restricted else Status.PASS
    findings = [
        Finding(
            check,
            check,
            status,
            "policy",
            "sysctls" + cause,
            cause="apparmor-userns-restricted" if restricted else None,
        ),
        *(
            Finding(cid, cid, Status.PASS, "ok")
            for cid in ("bwrap.sandbox", "bwrap.nested", "bwrap.nested_weak")
        ),
        Finding("claude.sandbox_deps", "deps", Status.PASS, "ok"),
    ]
    host = {"binaries": {"bwrap": BWRAP, "socat": "/usr/bin/socat"}}
    return Report(host=host, findings=findings, recommendation=Recommendation(Mode.USER, "t"))


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout.for_root(make_target_root(tmp_path / "root"))


def planned_profile(layout: Layout, report: Report) -> tuple[AppArmorProfile, list[str]]:
    answers = Answers(Mode.USER, workspaces=WS, apparmor_bwrap_profile=True)
    plan = build_plan(report, answers, layout, facts=plan_facts())
    found = [a for a in plan.actions if a.kind == APPARMOR_KIND]
    assert len(found) == 1, [a.kind for a in plan.actions]
    assert isinstance(found[0], AppArmorProfile)
    return found[0], plan.notes


def test_the_text_is_ubuntus_documented_form_for_the_probed_bwrap() -> None:
    lines = render_profile(BWRAP).decode("ascii").splitlines()
    assert [line for line in lines if not line.startswith("#")] == DOCUMENTED
    assert (
        "profile sandbox-setup-bwrap /opt/bw/bin/bwrap flags"
        in render_profile("/opt/bw/bin/bwrap").decode()
    )


@pytest.mark.parametrize("path", ["/opt/my bwrap", "/usr/bin/bw*", "relative/bwrap", "/a/../b"])
def test_a_path_the_attachment_cannot_name_plainly_is_refused(path: str) -> None:
    assert attach_problem(path) is not None
    with pytest.raises(ValueError):
        render_profile(path)


def _parser_major(parser: str) -> int:
    out = subprocess.run([parser, "--version"], capture_output=True, text=True, check=False)
    found = re.search(r"version (\d+)\.", out.stdout + out.stderr)
    assert found, out
    return int(found.group(1))


def _parse(parser: str, path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [parser, "-Q", "-K", *extra, str(path)], capture_output=True, text=True, check=False
    )


def test_the_bytes_the_plan_writes_parse_with_the_real_apparmor_parser(
    layout: Layout, tmp_path: Path
) -> None:
    parser = require_tool("apparmor_parser")
    action, _notes = planned_profile(layout, restricted_report())
    data = action.desired()
    assert data == render_profile(BWRAP)
    written = tmp_path / "sandbox-setup-bwrap"
    written.write_bytes(data)
    if _parser_major(parser) >= 4:
        done = _parse(parser, written)
        assert done.returncode == 0, done.stderr
        return
    # AppArmor 3 (Debian 12): only the AppArmor 4 lines are unknown to it.
    include = tmp_path / "include"
    (include / "abi").mkdir(parents=True)
    shutil.copy("/etc/apparmor.d/abi/3.0", include / "abi/4.0")
    exact = _parse(parser, written, "-I", str(include))
    userns_line = data.decode().splitlines().index(APPARMOR4_LINES[1]) + 1
    assert exact.returncode != 0
    assert f"at line {userns_line}:" in exact.stderr, exact.stderr
    without = tmp_path / "without-userns"
    without.write_bytes(data.replace(APPARMOR4_LINES[1].encode() + b"\n", b""))
    done = _parse(parser, without, "-I", str(include))
    assert done.returncode == 0, done.stderr
    # ... and the parser does judge this text: a broken attachment is refused.
    broken = tmp_path / "broken"
    broken.write_bytes(without.read_bytes().replace(BWRAP.encode(), b"/usr/bin/bw rap"))
    assert _parse(parser, broken, "-I", str(include)).returncode != 0


def test_requested_the_plan_writes_the_profile_as_root_0644_and_loads_it(
    layout: Layout,
) -> None:
    before = snapshot(layout.root)
    action, notes = planned_profile(layout, restricted_report())
    assert snapshot(layout.root) == before, "planning writes nothing"
    assert action.path == PROFILE_FILE == PurePosixPath("/etc/apparmor.d/sandbox-setup-bwrap")
    assert (action.owner, action.mode, action.enforce) == ("root", 0o644, True)
    assert action.commands() == [["apparmor_parser", "-r", "-W", str(layout.real(PROFILE_FILE))]]
    assert action.is_change() and "+  userns," in action.diff()
    assert any("written, not loaded" in n for n in notes), notes  # --root: never loaded


def test_the_restriction_found_and_not_requested_is_offered_in_a_note(layout: Layout) -> None:
    plan = build_plan(
        restricted_report(), Answers(Mode.USER, workspaces=WS), layout, facts=plan_facts()
    )
    assert APPARMOR_KIND not in [a.kind for a in plan.actions]
    offer = [n for n in plan.notes if "--apparmor-bwrap-profile" in n]
    assert offer and "any process of any user" in offer[0], plan.notes
    quiet = build_plan(
        restricted_report(restricted=False),
        Answers(Mode.USER, workspaces=WS),
        layout,
        facts=plan_facts(),
    )
    assert not [n for n in quiet.notes if "--apparmor-bwrap-profile" in n]
    # unshare stopped while a profile lets bwrap through: nothing to offer for bwrap
    only_unshare = restricted_report(check="userns.create")
    quiet = build_plan(only_unshare, Answers(Mode.USER, workspaces=WS), layout, facts=plan_facts())
    assert not [n for n in quiet.notes if "--apparmor-bwrap-profile" in n]


def test_requested_where_the_probes_did_not_find_it_is_installed_with_a_note(
    layout: Layout,
) -> None:
    _action, notes = planned_profile(layout, restricted_report(restricted=False))
    assert any("did not find" in n for n in notes), notes


def test_the_answers_record_the_request_and_replay_it() -> None:
    answers = Answers(Mode.USER, workspaces=WS, apparmor_bwrap_profile=True)
    text = dump_answers(answers)
    assert "apparmor_bwrap_profile = true" in text
    assert parse_answers(text).apparmor_bwrap_profile
    assert "apparmor_bwrap_profile" not in dump_answers(Answers(Mode.USER, workspaces=WS))
    with pytest.raises(InputError, match="apparmor_bwrap_profile"):
        parse_answers('mode = "user"\napparmor_bwrap_profile = "yes"\n')


def test_a_wizard_run_from_saved_answers_keeps_the_request() -> None:
    from sandbox_setup.tui.flow import draft_from_answers

    saved = Answers(Mode.USER, workspaces=WS, apparmor_bwrap_profile=True)
    assert draft_from_answers(saved).answers().apparmor_bwrap_profile
    plain = Answers(Mode.USER, workspaces=WS)
    assert not draft_from_answers(plain).answers().apparmor_bwrap_profile


@pytest.mark.parametrize(
    ("release", "sysctls", "unconfined"),
    [("24.04", UBUNTU_2404_SHIPPED_SYSCTLS, 0), ("26.04", UBUNTU_2604_SYSCTLS, 1)],
)
def test_the_probe_reads_both_restrictions_and_the_bwrap_profiles(
    tmp_path: Path, release: str, sysctls: dict[str, str], unconfined: int
) -> None:
    """Made-up /proc/sys and /etc/apparmor.d trees (this kernel has no AppArmor)."""
    files = {
        "/etc/apparmor.d/bwrap-userns-restrict": fixture_text("apparmor", "bwrap-userns-restrict")
    }
    facts = gather_host_facts(make_root(tmp_path, sysctls=sysctls, files=files), env={})
    assert facts.sysctl_int("kernel.apparmor_restrict_unprivileged_userns") == 1, release
    assert facts.sysctl_int("kernel.apparmor_restrict_unprivileged_unconfined") == unconfined
    assert facts.bwrap_profiles == ("/etc/apparmor.d/bwrap-userns-restrict",)
    assert facts.bwrap_restricting_profiles == ("/etc/apparmor.d/bwrap-userns-restrict",)
    bare = gather_host_facts(make_root(tmp_path / "bare", sysctls=sysctls), env={})
    cause = cause_apparmor(bare, 1000, tool="bwrap")
    assert cause is not None and cause.key == "apparmor-userns-restricted"
    assert ("apparmor_restrict_unprivileged_unconfined=1" in cause.summary) is bool(unconfined)


def test_a_distribution_profile_for_bwrap_is_not_doubled(layout: Layout) -> None:
    """Ubuntu's bwrap-userns-restrict attaches to /usr/bin/bwrap: a second profile
    attaching there would conflict, so the apply refuses and names the one to load."""
    other = layout.real(PurePosixPath("/etc/apparmor.d/bwrap-userns-restrict"))
    Path(other).parent.mkdir(parents=True, exist_ok=True)
    Path(other).write_text(fixture_text("apparmor", "bwrap-userns-restrict"))
    answers = Answers(Mode.USER, workspaces=WS, apparmor_bwrap_profile=True)
    with pytest.raises(
        RefusedError, match="bwrap-userns-restrict already attaches to /usr/bin/bwrap"
    ):
        build_plan(restricted_report(), answers, layout, facts=plan_facts())
    Path(other).write_text(fixture_text("apparmor", "usr.bin.man"))  # attaches elsewhere
    planned_profile(layout, restricted_report())


@pytest.mark.parametrize(
    ("text", "attached"),
    [
        ("profile bwrap /usr/bin/bwrap flags=(attach_disconnected) {\n}", True),
        ("/usr/bin/bwrap {\n}", True),
        ("profile x /usr/bin/bwrap2 {\n}", False),
        ("# profile x /usr/bin/bwrap {", False),
        ("profile man /usr/bin/man {\n  /usr/bin/bwrap rix,\n}", False),
    ],
)
def test_attaches_to(text: str, attached: bool) -> None:
    assert attaches_to(text, BWRAP) is attached
