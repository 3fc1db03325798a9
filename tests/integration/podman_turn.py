"""Run inside a container: check, apply what it recommends, and one real Claude Code
turn through ``sandbox-launch`` against the fake Messages API (started here, on the
container's loopback), whose Bash step reports where it ran. Stdlib and the copied
``tests.fake_api`` / ``tests.bash_evidence`` only. Prints one JSON object.

    python podman_turn.py PROJECT_PYTHON CLAUDE WORKSPACE [EXTRA]

EXTRA, if given, is more shell the Bash step runs after the evidence (its output
lands in ``tool_result``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from urllib.parse import urlsplit

from tests.bash_evidence import evidence_command, new_marker, parse_evidence
from tests.fake_api import BashStep, FakeMessagesAPI, TextStep

API_KEY = "sk-ant-fake-podman-turn"


def run(argv: list[str], **options: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        argv, capture_output=True, text=True, timeout=300, check=False, **options
    )


def main() -> int:
    python, claude, workspace = sys.argv[1:4]
    more = f"; {sys.argv[4]}" if len(sys.argv) > 4 else ""
    os.makedirs(workspace, exist_ok=True)
    out: dict[str, object] = {}
    marker = new_marker()
    with FakeMessagesAPI([BashStep(evidence_command(marker) + more), TextStep("done")]) as api:
        port = urlsplit(api.base_url).port
        check = run([python, "-m", "sandbox_setup", "--check", "--json"])
        mode = json.loads(check.stdout)["recommendation"]["mode"]
        out["mode"] = mode
        extra = ["--allow-loopback-port", str(port)] if mode == "sandbox" else []
        apply = run(
            [python, "-m", "sandbox_setup", "--headless", "--mode", mode, "--workspace",
             workspace, "--claude", claude, *extra, "--yes"]
        )  # fmt: skip
        out["apply"] = [apply.returncode, apply.stdout[-2000:] + apply.stderr[-2000:]]
        flag = {
            "env": {
                "ANTHROPIC_BASE_URL": api.base_url,
                "ANTHROPIC_API_KEY": API_KEY,
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_CODE_MAX_RETRIES": "2",
            }
        }
        launch = run(
            [python, "-m", "sandbox_setup.launcher", "--", "--print", "--output-format",
             "json", "--dangerously-skip-permissions", "--settings", json.dumps(flag), "--",
             "Run the command."],
            cwd=workspace,
            # The API in the caller's environment too, as a gateway's launcher gives it:
            # user mode's Landlock lets the agent reach a passed loopback base URL's port
            # (and nothing else on loopback); a --settings value alone does not count.
            env={**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": API_KEY},
        )  # fmt: skip
        out["launch"] = [launch.returncode, launch.stdout[-3000:] + launch.stderr[-3000:]]
        results = api.tool_results()
    if results:
        evidence = parse_evidence(results[0].text, marker)
        out["tool_result"] = results[0].text
        out["evidence"] = {
            "marker_seen": evidence.marker_seen,
            "uid": evidence.uid,
            "seccomp": evidence.seccomp,
            "sandboxed": evidence.sandboxed,
            "unsandboxed": evidence.unsandboxed,
        }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
