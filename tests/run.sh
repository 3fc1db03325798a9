#!/usr/bin/env bash
# Installs what the test suite needs on Debian 12 (as root) and runs the whole suite.
#   bash tests/run.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
# docker.io: tests/integration/test_docker.py starts a private dockerd of its own; the
# package's postinst starts the system one only where policy-rc.d allows it (it does not
# in Debian's container images; see docs/claude-code-behaviour.md).
# crun beside runc: Podman then prefers crun (Debian installs it with `podman` alone); the
# container tests name runc (tests/integration/podman.py), and crun here proves they do.
NPM_PREFIX=${SANDBOX_SETUP_NPM_PREFIX:-/opt/sandbox-setup-test/npm}

apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  bubblewrap runc util-linux passwd acl socat ripgrep procps python3 python3-venv \
  ca-certificates git iproute2 curl openssl e2fsprogs keyutils tmux openssh-server \
  apparmor podman crun uidmap slirp4netns fuse-overlayfs docker.io >/dev/null
command -v npm >/dev/null || apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null

# Claude Code and sandbox-runtime (srt), in prefixes outside /root so the agent user and
# user-namespaced containers can read them. Two Claude Code releases, by explicit tag (a
# bare name resolves, on Debian's Node, to the last release that accepts it): the newest
# (`latest`, what operators install today) and the oldest the project supports
# (tests/tools.py CLAUDE_OLDEST); the e2e tests run against both.
OCX_VERSION=$(sed -n 's/^OCX_VERSION = "\(.*\)"$/\1/p' tests/tools.py)
CLAUDE_OLDEST=$(sed -n 's/^CLAUDE_OLDEST = "\(.*\)"$/\1/p' tests/tools.py)
OLDEST_PREFIX=${SANDBOX_SETUP_NPM_OLDEST_PREFIX:-/opt/sandbox-setup-test/npm-claude-$CLAUDE_OLDEST}
mkdir -p "$NPM_PREFIX" "$OLDEST_PREFIX"
# OpenCodex (`ocx`), a proxy launcher: tests/e2e/test_ocx_launcher.py runs `ocx claude`
# through the claude shim (pinned: the release the issue was reproduced with).
npm install --no-fund --no-audit --loglevel=error --prefix "$NPM_PREFIX" \
  @anthropic-ai/claude-code@latest @anthropic-ai/sandbox-runtime \
  "@bitkyc08/opencodex@$OCX_VERSION" >/dev/null
npm install --no-fund --no-audit --loglevel=error --prefix "$OLDEST_PREFIX" \
  "@anthropic-ai/claude-code@$CLAUDE_OLDEST" >/dev/null
chmod -R a+rX "$NPM_PREFIX" "$OLDEST_PREFIX"
export PATH="$NPM_PREFIX/node_modules/.bin:$PATH"
echo "Claude Code: $("$NPM_PREFIX/node_modules/.bin/claude" --version) (latest)," \
  "$("$OLDEST_PREFIX/node_modules/.bin/claude" --version) (oldest supported)"

# The project and its test tools, in a venv of Debian's Python.
[ -x .venv/bin/python ] || /usr/bin/python3 -m venv .venv
# (pip's notes about the offline index's missing mirrors are noise: keep only errors)
.venv/bin/pip install -q --disable-pip-version-check -e ".[test]" 2> >(grep -v "^WARNING: Location" >&2)

exec .venv/bin/python -m pytest -rs "$@"
