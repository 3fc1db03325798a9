"""Benchmark (by hand, not CI): a whole scripted Claude Code session, launched and not.

The launch rows time the launcher's fixed cost against ``claude --print ok``, which
exits at once; what the operator feels is that cost over a session. Here the real
Claude Code works through one: it answers a prompt in seven model turns, six of them
``tool_use`` of its Bash tool (read the git history, size the module, run the tests,
add a function and its test, run the tests again, commit), the model being the fake
Messages API of ``tests/fake_api`` on loopback. Its answers are streamed as a model's
are, paced by :data:`PACE` (0.5 s to the first token, then about 400 characters a
second: quicker than the real API, so the launcher's share is if anything overstated).

Baseline: ``claude --print ... -- PROMPT`` as root (``IS_SANDBOX=1``, a fresh HOME, the
launcher's clean environment) in a fresh copy of a small git repository. Candidate:
``sandbox-launch --config <temp> -- <the same arguments>`` in sandbox mode, set up as
``bench/launch.py`` sets it up (the agent a live ``ac-bench-agent`` account, its home
and the workspace under a temp root, nothing applied to the host), in its own fresh
copy of the repository.
Claude's own inner sandbox is off on both sides (it would need managed settings in
/etc); ``--network allowlist`` (the default, as sandbox-setup configures sandbox mode)
exposes the fake API's port to the sandbox (``loopback_ports``), so Claude's API
traffic goes through the launcher's forwarder, as it goes through the egress proxy in
a real session. Each run is checked: Claude must end with the scripted final text, and
every command must have printed its ``step-N-ok``. Runs alternate; the result is the
ratio of the medians. Target: <= 1.02.

    .venv/bin/python bench/session.py [--runs 7] [--network allowlist|host]
    .venv/bin/python bench/session.py --compare landlock [--runs 7]

``--compare landlock`` (issue 29): both sides are user-mode launches as that agent, the
baseline with ``[user] landlock = false``, the candidate with Landlock as the launcher
applies it by default (Claude's inner sandbox off on both, so all three walls: the
files rules, TCP connect only to the session's egress proxy and the fake API's port,
scopes; the helper, its verification and the session's proxy). Same target.

Needs root, bwrap, setpriv, git and Claude Code from npm (tests/run.sh installs it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path, PurePosixPath
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "bench"), str(REPO / "src"), str(REPO)]

from launch import NPM_CLAUDE, bench_agent, console  # noqa: E402  (bench/launch.py)

from sandbox_setup.base.choices import InnerSandbox, Mode, Network  # noqa: E402
from sandbox_setup.base.launcher_config import LauncherConfig  # noqa: E402
from sandbox_setup.configure.launcher_toml import render_launcher_config  # noqa: E402
from tests.fake_api import BashStep, FakeMessagesAPI, Pace, TextStep, content_text  # noqa: E402

TARGET = 1.02
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PACE = Pace(first_token=0.5, delta_chars=16, interval=0.04)
PROMPT = "Add a slugify function to textkit, with a test, and commit it."
COMMIT = "git -c user.name=bench -c user.email=bench@example.invalid commit -qm"

TEXTKIT = '''"""Small text helpers."""

import re


def words(text):
    """The lower-case words of ``text``."""
    return re.findall(r"[a-z0-9]+", text.lower())


def title_case(text):
    return " ".join(word.capitalize() for word in words(text))


def initials(text):
    return "".join(word[0] for word in words(text)).upper()
'''
TESTS = """import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import textkit


class TextkitTest(unittest.TestCase):
    def test_words(self):
        self.assertEqual(textkit.words("Hello, World 2"), ["hello", "world", "2"])

    def test_title_case(self):
        self.assertEqual(textkit.title_case("a tale of two"), "A Tale Of Two")

    def test_initials(self):
        self.assertEqual(textkit.initials("portable network graphics"), "PNG")
"""
SLUGIFY = """cat >> src/textkit.py <<'EOF'


def slugify(text):
    return "-".join(words(text))
EOF
cat >> tests/test_textkit.py <<'EOF'


class SlugifyTest(unittest.TestCase):
    def test_slugify(self):
        self.assertEqual(textkit.slugify("Hello, World 2"), "hello-world-2")
EOF
"""
FINAL = (
    "Done. I added `slugify(text)` to `src/textkit.py`: it joins the lower-case words of "
    "the text with hyphens, reusing `words()` so punctuation and case are handled the same "
    "way as everywhere else in the module. There is a test for it in "
    "`tests/test_textkit.py`, and the whole suite passes (4 tests). The change is "
    "committed as 'textkit: slugify'. You may want a follow-up for non-ASCII input: "
    "`words()` keeps only a-z and 0-9, so accented letters are dropped today."
)
STEPS = [
    ("I'll start with the repository: its recent history, its state and its files.",
     "git log --oneline -5 && git status --short && ls -la && echo uid=$(id -u)"),
    ("Now the size of the module and what it defines.",
     "wc -l src/*.py tests/*.py && grep -n '^def \\|^class ' src/*.py tests/*.py"),
    ("Let me run the tests first, to see what already works.",
     "python3 -m unittest discover -s tests 2>&1 | tail -4"),
    ("The tests pass. I'll add slugify next to the other helpers, built on words(), "
     "with a test of its own.", SLUGIFY.strip()),
    ("Now the tests again, the new one included.",
     "python3 -m unittest discover -s tests 2>&1 | tail -4 && git diff --stat"),
    ("All four pass. Committing.",
     f"git add -A && {COMMIT} 'textkit: slugify' && git log --oneline -3"),
]  # fmt: skip
SCRIPT = [
    *(BashStep(f"{command}\necho step-{n}-ok", description=text[:60], text=text)
      for n, (text, command) in enumerate(STEPS)),
    TextStep(FINAL),
]  # fmt: skip


def make_repository(path: Path) -> None:
    """The workspace every run starts from: a small Python project under git."""
    (path / "src").mkdir(parents=True)
    (path / "tests").mkdir()
    (path / "src" / "textkit.py").write_text(TEXTKIT)
    (path / "tests" / "test_textkit.py").write_text(TESTS)
    (path / "README.md").write_text("# textkit\n\nSmall text helpers.\n")
    env = {"PATH": PATH, "HOME": str(path), "GIT_CONFIG_NOSYSTEM": "1"}
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                 [*COMMIT.split(), "textkit: words, title_case, initials"]):  # fmt: skip
        subprocess.run(argv, cwd=path, env=env, check=True, capture_output=True)


def fresh(template: Path, workspace: Path, home: Path, uid: int) -> None:
    """A copy of ``template`` at ``workspace`` and an empty ``home``, both ``uid``'s."""
    for directory in (workspace, home):
        shutil.rmtree(directory, ignore_errors=True)
    shutil.copytree(template, workspace, symlinks=True)
    home.mkdir(mode=0o700)
    for directory in (workspace, home):
        os.chown(directory, uid, uid)
        for root, dirs, files in os.walk(directory):
            for name in dirs + files:
                os.lchown(os.path.join(root, name), uid, uid)


def claude_args(base_url: str) -> list[str]:
    """The same arguments on both sides: the endpoint in ``--settings`` (the launcher
    passes none of the caller's environment)."""
    env = {"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "sk-ant-api03-fake-key-bench",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
           "CLAUDE_CODE_MAX_RETRIES": "2"}  # fmt: skip
    return ["--print", "--output-format", "json", "--dangerously-skip-permissions",
            "--settings", json.dumps({"env": env}), "--", PROMPT]  # fmt: skip


def check_session(
    api: FakeMessagesAPI, since: int, result: subprocess.CompletedProcess[str], uid: int
) -> None:
    """Refuse a run that did not go through the whole script with every command run, as
    ``uid`` (the launched side's commands as the agent: it really ran in the sandbox)."""
    output = result.stdout + result.stderr
    final = None
    for line in result.stdout.splitlines():
        if line.startswith("{"):
            try:
                final = json.loads(line).get("result", final)
            except ValueError:
                continue
    if result.returncode != 0 or final != FINAL:
        raise SystemExit(f"the session did not end as scripted (exit {result.returncode}):\n"
                         f"{output[-3000:]}")  # fmt: skip
    last = [r for r in api.requests[since:] if r.is_main][-1]
    results: list[Any] = [
        block for message in last.body["messages"] if isinstance(message.get("content"), list)
        for block in message["content"] if block.get("type") == "tool_result"
    ]  # fmt: skip
    for n, block in enumerate(results):
        if f"step-{n}-ok" not in content_text(block.get("content")) or block.get("is_error"):
            raise SystemExit(f"step {n} failed: {content_text(block.get('content'))[-2000:]}")
    if len(results) != len(STEPS):
        raise SystemExit(f"{len(results)} tool results, not {len(STEPS)}")
    if f"uid={uid}\n" not in content_text(results[0].get("content")):
        raise SystemExit(f"the commands did not run as uid {uid}")


def write_config(
    path: Path,
    claude: str,
    home: Path,
    workspace: Path,
    network: Network,
    api_port: int,
    landlock: bool,
    off: bool = False,
    agent: str = "ac-bench-agent",
) -> None:
    """The launcher config of the launched side: sandbox mode as sandbox-setup writes it,
    or (``landlock``) user mode, Landlock on unless ``off``; the fake API's port exposed
    either way (in user mode, Landlock's one loopback port besides the proxy)."""
    sandbox = not landlock
    text = render_launcher_config(
        LauncherConfig(
            mode=Mode.SANDBOX if sandbox else Mode.USER,
            claude=PurePosixPath(claude),
            agent_user=agent,
            agent_home=PurePosixPath(home),
            workspaces=(PurePosixPath(workspace),),
            network=network if sandbox else Network.HOST,
            inner_sandbox=InnerSandbox.STRONG if sandbox else InnerSandbox.OFF,
            loopback_ports=(api_port,) if not sandbox or network is Network.ALLOWLIST else (),
        )
    )
    path.write_text(text + ("\n[user]\nlandlock = false\n" if off else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--claude", default=str(shutil.which("claude") or NPM_CLAUDE))
    parser.add_argument("--network", choices=["allowlist", "host"], default="allowlist")
    parser.add_argument("--compare", choices=["direct", "landlock"], default="direct")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (the launcher drops to the agent)")
    for tool in ("bwrap", "setpriv", "git"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is not installed")

    base = Path(tempfile.mkdtemp(prefix="sandbox-session-bench-", dir="/tmp"))
    api = FakeMessagesAPI(SCRIPT, pace=PACE, final_text=FINAL).start()
    accounts = ExitStack()
    try:
        account = accounts.enter_context(bench_agent())  # sandbox-launch refuses nobody
        agent = account.uid
        base.chmod(0o755)
        template = base / "template"
        make_repository(template)
        ws_direct, home_direct = base / "ws-direct", base / "home-direct"
        ws_launch, home_launch = base / "ws-launch", base / "home-launch"
        fresh(template, ws_launch, home_launch, agent)  # the launcher checks they exist
        landlock = args.compare == "landlock"
        if landlock:
            fresh(template, ws_direct, home_direct, agent)
        network = Network(args.network)
        config = base / "launcher.toml"
        write_config(config, args.claude, home_launch, ws_launch, network, api.port, landlock,
                     agent=account.name)  # fmt: skip
        config.chmod(0o644)
        direct_env = {"PATH": PATH, "HOME": str(home_direct), "TERM": "dumb",
                      "LANG": "C.UTF-8", "IS_SANDBOX": "1"}  # fmt: skip
        launch_env = {"PATH": PATH, "PYTHONPATH": str(REPO / "src"), "TERM": "dumb",
                      "XDG_STATE_HOME": str(base / "state")}  # fmt: skip
        launcher = [*console("sandbox-launch", "sandbox_setup.launcher"), "--config", str(config)]
        sides = {
            "direct": ([args.claude, *claude_args(api.base_url)], direct_env, ws_direct,
                       home_direct, 0),
            "launch": ([*launcher, "--", *claude_args(api.base_url)], launch_env, ws_launch,
                       home_launch, agent),
        }  # fmt: skip

        def timed(side: str) -> float:
            argv, env, workspace, home, uid = sides[side]
            fresh(template, workspace, home, uid)
            since = len(api.requests)
            start = time.perf_counter()
            result = subprocess.run(argv, env=env, cwd=workspace, capture_output=True,
                                    text=True, timeout=300, check=False)  # fmt: skip
            elapsed = time.perf_counter() - start
            check_session(api, since, result, uid)
            return elapsed

        if landlock:  # the baseline: the same user-mode launch without Landlock
            unconfined = base / "unconfined.toml"
            write_config(unconfined, args.claude, home_direct, ws_direct, network, api.port,
                         landlock, off=True, agent=account.name)  # fmt: skip
            unconfined.chmod(0o644)
            sides["direct"] = (
                [*launcher[:-1], str(unconfined), "--", *claude_args(api.base_url)],
                launch_env, ws_direct, home_direct, agent,
            )  # fmt: skip
        timed("direct"), timed("launch")  # warm the page cache for both
        if landlock:
            log = base / "state" / "sandbox-setup" / "egress.log"
            if '"mode": "user"' not in (log.read_text() if log.exists() else ""):
                raise SystemExit(f"no user-mode egress proxy in {log}: Landlock was not on")
        elif network is Network.ALLOWLIST:
            log = base / "state" / "sandbox-setup" / "egress.log"
            if f'"port": {api.port}' not in (log.read_text() if log.exists() else ""):
                raise SystemExit(f"no loopback forward of port {api.port} in {log}")
        times: dict[str, list[float]] = {"direct": [], "launch": []}
        for i in range(args.runs):
            for side in ("direct", "launch") if i % 2 == 0 else ("launch", "direct"):
                times[side].append(timed(side))
    finally:
        api.stop()
        accounts.close()
        shutil.rmtree(base, ignore_errors=True)

    direct, launched = statistics.median(times["direct"]), statistics.median(times["launch"])
    ratio = launched / direct
    if args.compare == "landlock":
        print(f"user mode, no Landlock median {direct * 1000:8.1f} ms over {args.runs} sessions")
        print(f"user mode with Landlock median {launched * 1000:7.1f} ms over {args.runs} "
              "sessions")  # fmt: skip
    else:
        print(f"claude directly        median {direct * 1000:8.1f} ms over {args.runs} sessions")
        print(f"through sandbox-launch median {launched * 1000:8.1f} ms over {args.runs} "
              f"sessions (network {args.network})")  # fmt: skip
    print(f"ratio {ratio:.3f} (target <= {TARGET}) -> {'ok' if ratio <= TARGET else 'OVER'}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
