"""Every e2e test runs against each supported Claude Code release: the newest (npm's
``latest``) and the oldest the project supports (:data:`tests.tools.CLAUDE_OLDEST`).

The test id names the release and its version (``[claude-latest-2.1.332]``), and the
run's summary lists each e2e test with the version it ran against. A test that holds
for one release only says so with ``@pytest.mark.claude_release("latest", reason=...)``;
it is skipped, with that reason, for the other. A test that runs no Claude at all
(a control) says ``@pytest.mark.no_claude`` and runs once, with no release.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.tools import RELEASE_LABELS, ClaudeRelease, _missing, claude_release, use_release


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "claude_release(label, reason): the test holds for that Claude Code release"
    )
    config.addinivalue_line("markers", "no_claude: the test runs no Claude Code (runs once)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "claude_under_test" in metafunc.fixturenames and not any(
        m.name == "no_claude" for m in metafunc.definition.iter_markers()
    ):
        releases = [claude_release(label) for label in RELEASE_LABELS]
        metafunc.parametrize(
            "claude_under_test", releases, ids=[r.id for r in releases], indirect=True
        )


@pytest.fixture(autouse=True)
def claude_under_test(request: pytest.FixtureRequest) -> Iterator[ClaudeRelease | None]:
    """The release this test runs against; :func:`tests.tools.claude_binary` returns it."""
    if request.node.get_closest_marker("no_claude") is not None:
        yield None
        return
    release: ClaudeRelease = request.param
    request.node.user_properties.append(("claude_code", f"{release.label} {release.version}"))
    marker = request.node.get_closest_marker("claude_release")
    if marker is not None and marker.args[0] != release.label:
        pytest.skip(
            f"for Claude Code {marker.args[0]} only: {marker.kwargs.get('reason', 'no reason')}"
        )
    if release.binary is None:
        _missing(f"Claude Code {release.label} is not installed (tests/run.sh installs it)")
    use_release(release)
    yield release
    use_release(None)
