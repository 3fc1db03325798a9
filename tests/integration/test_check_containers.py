"""`sandbox-setup --check --json` inside real containers, judged against ground truth.

Each scenario is one place (the host, runc containers built from temp bundles, an
outer bwrap started by root). In one run per scenario, a script first does the raw
experiments each live check stands for (``unshare -Ur``, ``unshare -Urmpf
--mount-proc``, the bwrap commands, installing a seccomp filter, reading
mountinfo), then runs ``python -m sandbox_setup --check --json`` in the same place. The
tests assert every live check's verdict equals what really happened, and that a
non-pass names the right cause.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandbox_setup.base.netwall import PORTS_ONLY
from tests.installed import ProjectInstall
from tests.integration.containers import (
    ContainerConfig,
    HostPlace,
    Place,
    RootBwrap,
    RuncContainer,
    Section,
    base_env,
    parse_sections,
    proc_overmounts,
    seccomp_blocking_filters,
    seccomp_blocking_userns,
    sectioned_script,
)
from tests.tools import NPM_PREFIX

pytestmark = pytest.mark.integration

BWRAP = "bwrap --unshare-user --unshare-pid --ro-bind / / --dev /dev"
# Installs an allow-all seccomp filter (after no_new_privs), as a sandbox would.
SECCOMP_PY = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte),
                ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Insn))]
insns = (Insn * 1)(Insn(0x06, 0, 0, 0x7FFF0000))  # BPF_RET|BPF_K SECCOMP_RET_ALLOW
prog = Prog(1, insns)
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
    sys.exit("no_new_privs: " + os.strerror(ctypes.get_errno()))
if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
    sys.exit("seccomp: " + os.strerror(ctypes.get_errno()))
"""
CLAUDE = NPM_PREFIX / "node_modules/.bin/claude"
# The outer sandbox as the launcher starts it by default (its own network namespace).
OUTER = f"{BWRAP} --unshare-net --proc /proc"


def inner(weak: bool, uid: int, helper: bool) -> str:
    """Claude's inner sandbox as its sandbox-runtime starts it (what sandbox_setup.checks.bwrap
    models):
    its own network namespace, --cap-drop ALL (+ CAP_SETFCAP for uid 0), the command run
    through Claude's built-in seccomp helper, or ``unshare -Ur`` standing in for it."""
    caps = "--cap-drop ALL" + (" --cap-add CAP_SETFCAP" if uid == 0 else "")
    proc = "--bind /proc /proc" if weak else "--proc /proc"
    run = f"env ARGV0=apply-seccomp {os.path.realpath(CLAUDE)}" if helper else "unshare -Ur"
    return (
        f"bwrap --unshare-net --ro-bind / / --dev /dev --unshare-pid --unshare-user {caps} "
        f"{proc} -- {run} true"
    )


def experiments(uid: int) -> dict[str, str]:
    """What each live check stands for, as the raw experiment (docs/design.md, issue 2), for
    a probe user of ``uid``. The nested ones come twice: with Claude's seccomp helper and
    with its stand-in; the check's detail says which it ran."""
    found = {
        "userns.create": "unshare -Ur true",
        "proc.fresh_mount": "unshare -Urmpf --mount-proc true",
        "bwrap.sandbox": f"{BWRAP} --proc /proc true",
    }
    for helper, suffix in ((True, ""), (False, "-stand-in")):
        strong, weak = inner(False, uid, helper), inner(True, uid, helper)
        found |= {
            f"bwrap.nested{suffix}": f"{OUTER} {strong}",
            f"bwrap.nested_weak{suffix}": f"{OUTER} {weak}",
            # Not checks: Claude's inner sandbox forms started right here, no outer bwrap.
            f"strong_here{suffix}": strong,
            f"weak_here{suffix}": weak,
        }
    return found


HELPER_RAN = "ran through claude code's built-in seccomp helper"
STAND_IN_RAN = "unshare -ur stood in"
LIVE_IDS = (
    "userns.create",
    "proc.fresh_mount",
    "bwrap.sandbox",
    "bwrap.nested",
    "bwrap.nested_weak",
    "seccomp.available",
)
NOBODY = "setpriv --reuid 65534 --regid 65534 --clear-groups --"


@dataclass(frozen=True)
class Scenario:
    """A place, the user the probes run as, and what the place is known to allow.

    ``known`` pins the facts that make the scenario what its name says (e.g. a
    fresh /proc is impossible under Docker's masks), so a harness that silently
    built the wrong container fails instead of agreeing with a wrong check.
    """

    place: Callable[[Path, dict[str, str]], Place]  # (bundle dir, tool paths)
    as_user: str | None = None
    masked: bool = False
    known: tuple[tuple[str, bool], ...] = ()
    # The cause a failing live check must name here: "masks", "seccomp" or
    # "root-covers" (the read-only covers of a bwrap started by root); None: nothing
    # may fail. nested_cause, when set, is the one for bwrap.nested alone.
    cause: str | None = None
    nested_cause: str | None = None
    # Inside a bwrap sandbox already (pid 1 is bwrap): that is the outer sandbox,
    # so Claude's inner forms are judged as they run right here.
    inside_bwrap: bool = False
    # The cause both nested checks must name, where it differs from ``cause``.
    inner_cause: str | None = None

    def experiment_for(self, check_id: str, helper: bool = True) -> str:
        """The raw experiment that is the ground truth of ``check_id`` here (for the
        nested checks: with Claude's seccomp helper, or with its stand-in)."""
        suffix = "" if helper else "-stand-in"
        if self.inside_bwrap:
            inner_here = {"bwrap.nested": "strong_here", "bwrap.nested_weak": "weak_here"}
            if check_id in inner_here:
                return inner_here[check_id] + suffix
        if check_id in ("bwrap.nested", "bwrap.nested_weak"):
            return check_id + suffix
        return check_id

    def cause_of(self, check_id: str) -> str | None:
        if check_id in ("bwrap.nested", "bwrap.nested_weak") and self.inner_cause:
            return self.inner_cause
        if check_id == "bwrap.nested" and self.nested_cause:
            return self.nested_cause
        return self.cause


DOCKER = ContainerConfig()


def _runc(config: ContainerConfig, name: str) -> Callable[[Path, dict[str, str]], Place]:
    def make(bundles: Path, tools: dict[str, str]) -> Place:
        return RuncContainer(
            config, bundles, name=name, runc=tools["runc"], unshare=tools["unshare"]
        )

    return make


SCENARIOS: dict[str, Scenario] = {
    # (1) the host as it is; root's outer bwrap covers /proc/irq etc., so the
    # strong nested form fails as root and works as an unprivileged agent.
    "host": Scenario(
        lambda wd, tools: HostPlace(),
        known=(
            ("userns.create", True),
            ("proc.fresh_mount", True),
            ("bwrap.sandbox", True),
            ("bwrap.nested", False),
            ("bwrap.nested_weak", True),
        ),
        nested_cause="root-covers",
    ),
    "host-as-nobody": Scenario(
        lambda wd, tools: HostPlace(),
        as_user="nobody",
        known=(("bwrap.sandbox", True), ("bwrap.nested", True), ("bwrap.nested_weak", True)),
    ),
    # (2) user-namespaced container with Docker's masked/read-only /proc paths.
    "docker-userns": Scenario(
        _runc(DOCKER, "docker-userns"),
        masked=True,
        known=(("userns.create", True), ("proc.fresh_mount", False), ("bwrap.sandbox", False)),
        cause="masks",
    ),
    # (3) the same with the masks removed (podman unmask=/proc/*, docker systempaths=unconfined).
    "docker-userns-unmasked": Scenario(
        _runc(DOCKER.unmasked(), "docker-userns-unmasked"),
        known=(("userns.create", True), ("proc.fresh_mount", True), ("bwrap.sandbox", True)),
    ),
    # (4) no user namespace, Docker's 14 default capabilities (and its masks).
    "docker-no-userns": Scenario(
        _runc(ContainerConfig(userns=False), "docker-no-userns"),
        masked=True,
        known=(("proc.fresh_mount", False), ("bwrap.sandbox", False)),
        cause="masks",
    ),
    # (4b) the same without masks: root without CAP_SYS_ADMIN, /proc fully visible.
    "docker-no-userns-unmasked": Scenario(
        _runc(ContainerConfig(userns=False).unmasked(), "docker-no-userns-unmasked"),
        known=(
            ("userns.create", True),
            ("proc.fresh_mount", True),
            ("bwrap.sandbox", True),
            ("bwrap.nested", False),
        ),
        nested_cause="root-covers",
    ),
    # (3b) the unmasked user-namespaced container, probed as its unprivileged agent.
    "docker-userns-unmasked-as-nobody": Scenario(
        _runc(DOCKER.unmasked(), "docker-userns-unmasked-as-nobody"),
        as_user="nobody",
        known=(("userns.create", True), ("proc.fresh_mount", True), ("bwrap.sandbox", True)),
    ),
    # (5) a seccomp profile that blocks new user namespaces; unmasked, so the
    # profile is the only cause.
    "seccomp-no-newuser": Scenario(
        _runc(ContainerConfig(seccomp=seccomp_blocking_userns()).unmasked(), "seccomp-no-newuser"),
        known=(("userns.create", False), ("proc.fresh_mount", False), ("bwrap.sandbox", False)),
        cause="seccomp",
    ),
    # (5b) a seccomp profile that refuses new seccomp filters (seccomp(2) and
    # prctl(PR_SET_SECCOMP) fail with EPERM); user namespaces work, so besides
    # seccomp.available only the nested checks may fail: Claude's seccomp helper
    # cannot install its filter there, so neither can Claude's Bash tool start.
    "seccomp-no-filters": Scenario(
        _runc(ContainerConfig(seccomp=seccomp_blocking_filters()).unmasked(), "seccomp-no-filters"),
        known=(
            ("seccomp.available", False),
            ("userns.create", True),
            ("proc.fresh_mount", True),
            ("bwrap.sandbox", True),
            ("bwrap.nested", False),
            ("bwrap.nested-stand-in", True),
        ),
        inner_cause="seccomp-filter",
    ),
    # (6) inside an outer bwrap started by root: its read-only covers over /proc
    # make a fresh /proc impossible, so every probe that starts a bwrap with --proc
    # fails, bwrap.nested included (the strong inner form run here), while
    # Claude's weak form (bind /proc + unshare -Ur) still works: bwrap.nested_weak
    # passes. The checks see pid 1 is bwrap and run the inner forms right here.
    "root-bwrap": Scenario(
        lambda wd, tools: RootBwrap(bwrap=tools["bwrap"]),
        masked=True,
        known=(
            ("userns.create", True),
            ("proc.fresh_mount", False),
            ("bwrap.sandbox", False),
            ("strong_here", False),
            ("weak_here", True),
        ),
        cause="root-covers",
        inside_bwrap=True,
    ),
}


def _experiment_script(install: ProjectInstall, as_user: str | None) -> str:
    prefix = NOBODY + " " if as_user == "nobody" else ""
    commands = {
        name: f"cd / && {prefix}sh -c {shlex.quote(cmd)}"
        for name, cmd in experiments(65534 if as_user == "nobody" else 0).items()
    }
    commands["seccomp.available"] = f"cd / && {prefix}{install.python} -c {shlex.quote(SECCOMP_PY)}"
    # The launcher's side (root) of user mode's network wall: a network namespace.
    commands["netns_root"] = "cd / && unshare --net true"
    commands["mountinfo"] = "cat /proc/self/mountinfo"
    commands["status"] = "id; grep -E '^(Cap|NoNewPrivs|Seccomp)' /proc/self/status"
    # The experiments run as root or as nobody: so must the check (root's plain --check
    # would probe as an unprivileged stand-in for the agent).
    check = install.wizard("--check", "--json", "--as-user", as_user or "root")
    commands["check"] = f'cd / && {shlex.join(check)} 2>"$T/check.err"'
    commands["check_stderr"] = 'cat "$T/check.err"'
    return sectioned_script(commands)


@dataclass(frozen=True)
class Observed:
    """One scenario's run: raw experiment results and the check's JSON."""

    name: str
    scenario: Scenario
    sections: dict[str, Section]
    report: dict[str, Any]

    def works(self, experiment: str) -> bool:
        return self.sections[experiment].returncode == 0

    def ran_helper(self, check_id: str) -> bool:
        """Whether the check ran Claude's seccomp helper (else its stand-in): it says so."""
        detail = self.finding(check_id)["detail"].lower()
        assert (HELPER_RAN in detail) != (STAND_IN_RAN in detail), detail
        return HELPER_RAN in detail

    def finding(self, check_id: str) -> dict[str, Any]:
        found = [c for c in self.report["checks"] if c["id"] == check_id]
        assert found, f"{self.name}: no {check_id} in the report"
        return found[0]

    def overmounts(self) -> list[str]:
        return proc_overmounts(self.sections["mountinfo"].output)

    def context(self, experiment: str) -> str:
        section = self.sections[experiment]
        return (
            f"[{self.name}] raw {experiment}: rc={section.returncode} {section.output.strip()!r}\n"
            f"check stderr: {self.sections['check_stderr'].output.strip()[-800:]!r}"
        )


@pytest.fixture(scope="module", params=list(SCENARIOS))
def observed(
    request: pytest.FixtureRequest,
    project_install: ProjectInstall,
    integration_workdir: Path,
    container_tools: dict[str, str],
) -> Observed:
    """Runs one scenario once: the experiments, then --check --json, in the same place."""
    name: str = request.param
    scenario = SCENARIOS[name]
    place = scenario.place(integration_workdir / "bundles", container_tools)
    env = base_env(extra_path=[str(NPM_PREFIX / "node_modules/.bin")])
    script = _experiment_script(project_install, scenario.as_user)
    result = place.run(["/bin/sh", "-c", script], env=env, timeout=240)
    sections = parse_sections(result.stdout)
    assert "check" in sections, (
        f"{name}: the scenario did not run: rc={result.returncode}\n"
        f"stdout={result.stdout[-2000:]}\nstderr={result.stderr[-2000:]}"
    )
    try:
        report = json.loads(sections["check"].output)
    except json.JSONDecodeError as exc:
        pytest.fail(
            f"{name}: --check --json printed no JSON ({exc}): rc={sections['check'].returncode}\n"
            f"{sections['check'].output[-1500:]}\nstderr: {sections['check_stderr'].output[-1500:]}"
        )
    return Observed(name, scenario, sections, report)


def _text(finding: dict[str, Any]) -> str:
    return " ".join(str(finding.get(k, "")) for k in ("summary", "detail", "remedy")).lower()


def _assert_verdict(obs: Observed, check_id: str) -> dict[str, Any]:
    """The check passes exactly when its raw experiment worked there."""
    finding = obs.finding(check_id)
    status = finding["status"]
    nested = check_id in ("bwrap.nested", "bwrap.nested_weak")
    experiment = obs.scenario.experiment_for(
        check_id, helper=not nested or obs.ran_helper(check_id)
    )
    if obs.works(experiment):
        assert status == "pass", (
            f"{check_id} says {status}, but it works\n{obs.context(experiment)}"
        )
    else:
        assert status == "fail", (
            f"{check_id} says {status}, but it does not work\n{obs.context(experiment)}\n{finding}"
        )
        assert finding["remedy"].strip(), f"{check_id}: a failure without a remedy: {finding}"
    return finding


def _assert_cause(obs: Observed, check_id: str, finding: dict[str, Any]) -> None:
    """A failing live check names the cause this scenario really has, and not another."""
    if finding["status"] == "pass":
        return
    expected = obs.scenario.cause_of(check_id)
    text = _text(finding)
    cause = finding["summary"].lower()
    named = [p for p in obs.overmounts() if p.lower() in text]
    if expected == "seccomp":
        assert "seccomp" in cause, f"{check_id} does not name seccomp: {finding}"
        assert "seccomp=unconfined" in text or "profile" in finding["remedy"].lower(), finding
        assert "mask" not in cause, f"{check_id} blames masks in an unmasked container: {finding}"
    elif expected == "masks":
        assert "mask" in cause and named, f"{check_id} does not name the /proc masks: {finding}"
        assert "seccomp" not in cause, f"{check_id} blames seccomp: {finding}"
        assert "systempaths=unconfined" in finding["remedy"], finding
    elif expected == "seccomp-filter":
        assert "seccomp" in cause and "filter" in cause, f"{check_id}: {finding}"
        assert finding["detail"].endswith("cause: seccomp-filter-refused"), finding
    elif expected == "root-covers":
        # bwrap started by root covers /proc/irq, /proc/bus, ... read-only
        assert "cover" in cause, f"{check_id} does not name the covers over /proc: {finding}"
        if obs.overmounts():  # we are inside such a bwrap: the covers are ours to see
            assert named, f"{check_id} names none of the covers {obs.overmounts()}: {finding}"
        else:  # the covers are inside the probe's own outer bwrap, started as root
            assert "root" in cause, f"{check_id} does not say root started it: {finding}"
        assert "seccomp" not in cause, f"{check_id} blames seccomp: {finding}"
    else:
        pytest.fail(f"{obs.name}: {check_id} failed where nothing should: {finding}")


def test_scenario_is_what_it_claims(observed: Observed) -> None:
    for experiment, works in observed.scenario.known:
        assert observed.works(experiment) is works, observed.context(experiment)
    assert bool(observed.overmounts()) is observed.scenario.masked, observed.overmounts()


def test_report_shape(observed: Observed) -> None:
    report = observed.report
    assert report["schema"] == 1
    assert report["recommendation"]["mode"] in ("sandbox", "user", "unsafe")
    assert report["recommendation"]["reason"]
    ids = [c["id"] for c in report["checks"]]
    for check_id in (*LIVE_IDS, "proc.masks"):
        assert check_id in ids
    for finding in report["checks"]:
        assert finding["status"] in ("pass", "warn", "fail", "skip", "error"), finding
        # the checks judged here must not crash in any of these places
        if finding["id"] in (*LIVE_IDS, "proc.masks"):
            assert finding["status"] != "error", f"{observed.name}: a check crashed: {finding}"
    expected_rc = 1 if any(c["status"] in ("fail", "error") for c in report["checks"]) else 0
    assert observed.sections["check"].returncode == expected_rc


@pytest.mark.parametrize("check_id", ["userns.create", "proc.fresh_mount", "bwrap.sandbox"])
def test_namespace_checks_match_reality(observed: Observed, check_id: str) -> None:
    finding = _assert_verdict(observed, check_id)
    _assert_cause(observed, check_id, finding)


@pytest.mark.parametrize("check_id", ["bwrap.nested", "bwrap.nested_weak"])
def test_nested_checks_match_reality(observed: Observed, check_id: str) -> None:
    finding = _assert_verdict(observed, check_id)
    _assert_cause(observed, check_id, finding)


@pytest.mark.parametrize(
    ("check_id", "inner_alone"),
    [("bwrap.nested", "strong_here"), ("bwrap.nested_weak", "weak_here")],
)
def test_nested_says_whether_the_inner_form_alone_works(
    observed: Observed, check_id: str, inner_alone: str
) -> None:
    """Where no outer sandbox can start (e.g. inside root's bwrap), the finding still
    tells whether Claude's inner form would work run directly here; in (6) the weak
    form does, the strong one does not."""
    detail = observed.finding(check_id)["detail"].lower()
    if observed.scenario.inside_bwrap:
        # the verdict itself is the inner form run here; the detail says so
        assert "inner form ran here" in detail, detail
        return
    if observed.works("bwrap.sandbox"):
        assert "could not start" not in detail, f"the outer sandbox starts here: {detail}"
        return
    said = re.search(r"inner form alone.*?\b(works|fails)\b", detail, re.S)
    assert said, f"{check_id} does not say how the inner form alone fares: {detail}"
    if not observed.ran_helper(check_id):
        inner_alone += "-stand-in"
    assert (said[1] == "works") is observed.works(inner_alone), observed.context(inner_alone)


@pytest.mark.parametrize(
    ("check_id", "experiment"),
    [("bwrap.direct", "strong_here"), ("bwrap.direct_weak", "weak_here")],
)
def test_direct_checks_match_reality(observed: Observed, check_id: str, experiment: str) -> None:
    """Claude's sandbox with nothing around it (user mode's form, issue 27): the check
    passes exactly where that form, run right here as the probe user, works."""
    finding = observed.finding(check_id)
    if not observed.ran_helper(check_id):
        experiment += "-stand-in"
    works = observed.works(experiment)
    assert (finding["status"] == "pass") is works, (finding, observed.context(experiment))
    if not works:
        assert "cause: " in finding["detail"], finding


def test_seccomp_available_matches_reality(observed: Observed) -> None:
    finding = _assert_verdict(observed, "seccomp.available")
    if finding["status"] == "pass":
        return
    # A refused filter is blamed on seccomp, with the error the raw experiment got.
    summary = finding["summary"].lower()
    assert "seccomp" in summary and "mask" not in summary, finding
    assert finding["detail"].endswith("cause: seccomp-refused"), finding
    raw_error = observed.sections["seccomp.available"].output.strip().rpartition(": ")[2]
    assert raw_error and raw_error in finding["summary"], observed.context("seccomp.available")


def test_proc_masks_match_mountinfo(observed: Observed) -> None:
    finding = observed.finding("proc.masks")
    points = observed.overmounts()
    if not points:
        assert finding["status"] == "pass", f"no mounts over /proc, yet: {finding}"
        return
    assert finding["status"] in ("warn", "fail"), f"{points} over /proc, yet: {finding}"
    text = _text(finding)
    named = [p for p in points if p.lower() in text]
    assert named, f"proc.masks names none of {points}: {finding}"
    if observed.name.startswith("docker"):
        assert "systempaths=unconfined" in text or "unmask" in text, finding


def test_recommendation_follows_the_sandbox_probe(observed: Observed) -> None:
    """sandbox is recommended only where bwrap's sandbox really starts; never unsafe."""
    mode = observed.report["recommendation"]["mode"]
    assert mode != "unsafe"
    if not observed.works("bwrap.sandbox"):
        assert mode != "sandbox", observed.report["recommendation"]


def test_as_user_needs_root_when_run_as_nobody(
    project_install: ProjectInstall, container_tools: dict[str, str]
) -> None:
    """The CI-run twin of tests/unit's test_as_user_needs_root (CI runs as root):
    nobody asking for probes as root is a usage error (exit 2) naming --as-user,
    and nothing is reported."""
    check = project_install.wizard("--check", "--as-user", "root", "userns.create")
    script = f"cd / && {NOBODY} {shlex.join(check)}"
    result = HostPlace().run(["/bin/sh", "-c", script], env=base_env(), timeout=60)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "--as-user root" in result.stderr and "needs root" in result.stderr, result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("observed", ["seccomp-no-newuser"], indirect=True)
def test_where_namespaces_are_refused_landlock_is_found_and_recommended(
    observed: Observed,
) -> None:
    """Issue 29: a container whose seccomp profile refuses CLONE_NEWUSER (as Docker's
    default does) has no namespaces for the agent, but has Landlock (the profile allows
    its syscalls): --check says both and recommends user mode with Landlock."""
    assert observed.finding("userns.create")["status"] == "fail"
    landlock = observed.finding("landlock.abi")
    assert landlock["status"] == "pass", landlock
    assert landlock["summary"].startswith("Landlock ABI "), landlock
    recommendation = observed.report["recommendation"]
    assert recommendation["mode"] == "user", recommendation
    assert (
        "user namespaces are refused here, so User mode with Landlock" in (recommendation["reason"])
    ), recommendation


# Which network wall user mode gets (docs/design.md invariant 16), pinned: the host's root
# may make a network namespace (pass: its own namespace); root with Docker's default
# capabilities (no CAP_SYS_ADMIN), with or without a user namespace of the container's
# own, may not (warn: Landlock's ports only); nor in the seccomp places, whose root has
# those capabilities too (the no-userns seccomp case: user mode with Landlock's ports).
# Root inside a bwrap started by root holds every capability of its user namespace.
USER_WALLS = {
    "seccomp-no-newuser": "warn",
    "seccomp-no-filters": "warn",
    "root-bwrap": "pass",
    "host": "pass",
    "host-as-nobody": "pass",
    "docker-userns": "warn",
    "docker-userns-unmasked": "warn",
    "docker-userns-unmasked-as-nobody": "warn",
    "docker-no-userns": "warn",
    "docker-no-userns-unmasked": "warn",
}


def test_user_wall_matches_reality(observed: Observed) -> None:
    """net.user_wall passes exactly where root really makes a network namespace there
    (``unshare --net``), and otherwise says the wall is Landlock's ports, plainly."""
    finding = observed.finding("net.user_wall")
    works = observed.works("netns_root")
    assert finding["status"] == ("pass" if works else "warn"), (
        finding, observed.context("netns_root"))  # fmt: skip
    # The typed fact the plan and the audit read (never the words).
    assert finding.get("facts") == {"netns": works}, finding
    if works:
        assert "a network namespace of its own" in finding["summary"], finding
    else:
        assert PORTS_ONLY in finding["summary"], finding
        assert "a network namespace of its own" not in finding["summary"], finding
        assert finding["detail"].endswith("cause: netns-refused"), finding
    if observed.name in USER_WALLS:
        assert finding["status"] == USER_WALLS[observed.name], (
            finding, observed.context("netns_root"))  # fmt: skip
