#!/usr/bin/env bash
# Baseline for bench/check.py: the probe commands `sandbox-setup --check` runs,
# one after another, plus the same file reads. Exit status is ignored on purpose:
# the point is the time the experiments take, pass or fail.
#   bash bench/probes.sh [--as-user NAME] [--no-claude]
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd /
export LC_ALL=C
AS=()
CLAUDE_TOO=1
while [ $# -gt 0 ]; do
  case $1 in
    --as-user) AS_USER=$2; AS=(setpriv "--reuid=$(id -u "$2")" "--regid=$(id -g "$2")" --init-groups --)
               shift ;;
    --no-claude) CLAUDE_TOO=0 ;;
  esac
  shift
done
B=(bwrap --unshare-user --unshare-pid --ro-bind / / --dev /dev)
PY=$(readlink -f "$(command -v python3)")
VENV_PY="$REPO/.venv/bin/python"
[ -x "$VENV_PY" ] || VENV_PY=$PY

# file reads (identity, platform, proc.masks, userns.policy, tty.tiocsti)
cat /proc/self/status /proc/self/mountinfo >/dev/null
for f in user/max_user_namespaces kernel/unprivileged_userns_clone \
  kernel/apparmor_restrict_unprivileged_userns kernel/apparmor_restrict_unprivileged_unconfined \
  dev/tty/legacy_tiocsti kernel/seccomp/actions_avail; do
  cat "/proc/sys/$f" 2>/dev/null
done >/dev/null
cat /.dockerenv /run/.containerenv /run/systemd/container /proc/1/cgroup /proc/1/comm \
  /proc/version 2>/dev/null >/dev/null
command -v socat rg >/dev/null

# live probes, in registry order
"${AS[@]}" unshare -Ur true 2>/dev/null
"${AS[@]}" unshare -Urmpf --mount-proc true 2>/dev/null
bwrap --version >/dev/null
"${AS[@]}" "${B[@]}" --proc /proc true 2>/dev/null
"${AS[@]}" "${B[@]}" --proc /proc sh -c 'exec "$@"' sh "${B[@]}" --proc /proc true 2>/dev/null
"${AS[@]}" "${B[@]}" --proc /proc sh -c 'exec "$@"' sh \
  "${B[@]}" --bind /proc /proc unshare -Ur true 2>/dev/null
"${AS[@]}" "$PY" -I -S -c '
import ctypes, struct
libc = ctypes.CDLL(None, use_errno=True)
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
insn = ctypes.create_string_buffer(struct.pack("HBBI", 0x06, 0, 0, 0x7FFF0000))
libc.prctl(38, 1, 0, 0, 0)
libc.prctl(22, 2, ctypes.byref(Prog(1, ctypes.cast(insn, ctypes.c_void_p))), 0, 0)
' 2>/dev/null
# net.egress: a sandbox with its own network namespace, then the launcher's egress proxy
# (the same command the check runs: python code, there is no sh equivalent)
"${AS[@]}" "${B[@]}" --unshare-net --proc /proc cat /proc/net/route /proc/net/ipv6_route \
  >/dev/null 2>&1
EGRESS_UID=$(id -u "${AS_USER:-nobody}" 2>/dev/null || id -u nobody)
PYTHONPATH="$REPO/src" "$VENV_PY" -P -m sandbox_setup.launcher.egress.probe --uid "$EGRESS_UID" \
  --gid "$EGRESS_UID" >/dev/null 2>&1
if [ "$CLAUDE_TOO" = 1 ] && CLAUDE=$(command -v claude); then
  "${AS[@]}" "$CLAUDE" --version >/dev/null 2>&1
  # claude.root_guard: the version again, and the guard's message looked for in the
  # binary; no probe starts Claude with a session (invariant 13).
  GUARD_HOME=$(mktemp -d)
  HOME=$GUARD_HOME "${AS[@]}" "$CLAUDE" --version </dev/null >/dev/null 2>&1
  rm -rf "$GUARD_HOME"
  grep -qF "cannot be used with root/sudo privileges" "$(readlink -f "$CLAUDE")"
fi
exit 0
