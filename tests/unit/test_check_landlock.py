"""landlock.abi judged over canned probe output, and the live probe on this kernel."""

from __future__ import annotations

import pytest

from sandbox_setup.base import landlock
from sandbox_setup.checks.experiments import landlock_command
from sandbox_setup.checks.landlock import judge_landlock, parse_landlock_probe
from sandbox_setup.checks.model import Status
from sandbox_setup.checks.probe import ProbeResult, run_probe


def result(stdout: str, code: int | None = 0) -> ProbeResult:
    return ProbeResult(("python3", "-c", "..."), code, stdout)


@pytest.mark.parametrize(
    ("stdout", "status", "says", "cause"),
    [
        ("abi 7\nrestricted\n", Status.PASS, "ABI 7: has files, TCP connect", None),
        ("abi 6\nrestricted\n", Status.PASS, "abstract unix sockets and signals scoped", None),
        ("abi 4\nrestricted\n", Status.PASS, "lacks abstract unix", None),
        ("abi 3\nrestricted\n", Status.PASS, "network stays the host's", None),
        ("error create_ruleset(VERSION) EOPNOTSUPP\n", Status.WARN, "EOPNOTSUPP", "missing"),
        ("error create_ruleset(VERSION) ENOSYS\n", Status.WARN, "no Landlock", "missing"),
        ("error create_ruleset(VERSION) EPERM\n", Status.WARN, "EPERM", "refused"),
        ("abi 5\nerror restrict_self EPERM\n", Status.WARN, "applying a ruleset", "refused"),
    ],
)
def test_judge(stdout: str, status: Status, says: str, cause: str | None) -> None:
    verdict = judge_landlock(result(stdout))
    assert verdict.status is status
    assert says in verdict.summary
    if cause is None:
        assert "what each level" in verdict.detail
    else:
        assert verdict.detail.endswith(f"cause: landlock-{cause}")
        assert "lsm=" in verdict.remedy


def test_a_probe_that_did_not_run_is_an_error() -> None:
    assert judge_landlock(result("", None)).status is Status.ERROR
    assert judge_landlock(result("abi 7\n", 1)).status is Status.ERROR


def test_parse() -> None:
    assert parse_landlock_probe("abi 7\nrestricted\n") == (7, None, True)
    assert parse_landlock_probe("junk\nabi x\n") == (0, None, False)


def test_live_probe_agrees_with_the_binding() -> None:
    # The probe's child interpreter (-I -S, standard library only) and the launcher's
    # binding ask the same kernel the same question.
    live = run_probe(landlock_command(), timeout=20)
    assert parse_landlock_probe(live.stdout) == (landlock.abi_version(), None, True), live
    assert judge_landlock(live).status is Status.PASS
    # The plan and the audit read the ABI from the finding's typed fact.
    verdict = judge_landlock(live)
    assert dict(verdict.facts) == {"abi": landlock.abi_version()}


def test_the_abi_fact_when_landlock_is_missing_or_refused() -> None:
    from sandbox_setup.checks.landlock import abi_from
    from sandbox_setup.checks.model import Finding

    for stdout in ("abi 0\n", "abi 5\nerror restrict EPERM\n"):
        verdict = judge_landlock(ProbeResult(("python3",), 0, stdout))
        assert verdict.status is Status.WARN
        found = Finding(
            "landlock.abi", "t", verdict.status, verdict.summary, facts=dict(verdict.facts)
        )
        assert abi_from(found) == 0  # the agent gets none
    assert abi_from(None) is None
