#!/usr/bin/env bash
# The README's test command on a host where sandbox-setup is set up and in use.
#
#   bash tests/set_up_host.sh [pytest args...]        (as root, from a checkout)
#
# It shows what issue 25 asks: the whole suite passes on a host that has a real
# live apply (agent account, managed settings, claude shim, root's git include), a
# managed-settings drop-in that turns Claude's sandbox off, and a sandbox-launch
# session running (writing its state) for the whole run.
#
# The "host" is this machine seen through a private mount namespace: /etc, /opt,
# /root, /home, /srv and /usr/local are overlays whose writes go to a temp
# directory, so the live apply inside is real for everything in the namespace
# (useradd, the shim on PATH, /etc/claude-code, root's ~/.gitconfig and state
# directory) and gone with it. Only the session's cgroup is on the host's cgroup
# tree; the launcher removes it when the session ends.
#
# Accounts made inside (the host's agent, the suite's live test accounts) exist only
# in the namespace's /etc/passwd, so their uids are drawn from a range of their own
# (UID_MIN/GID_MIN 50000 in the namespace's login.defs): a suite running beside this
# one on the real host cannot make an account with the same uid and, cleaning up,
# kill every process of that uid (the host's session too).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${SET_UP_HOST_INSIDE:-}" != 1 ]; then
  [ "$(id -u)" = 0 ] || { echo "set_up_host.sh: run as root" >&2; exit 2; }
  export SET_UP_HOST_INSIDE=1
  exec unshare --mount --propagation private -- bash "$0" "$@"
fi

work=$(mktemp -d /var/tmp/set-up-host.XXXXXX)
session_pid=
cleanup() {
  if [ -n "$session_pid" ]; then
    kill -TERM -- "-$session_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$session_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT

for dir in etc opt root home srv usr/local; do
  mkdir -p "$work/$dir/upper" "$work/$dir/work" "/$dir"
  # An overlay's top directory takes its owner and mode from the upper one: without
  # these, /root would be mktemp's 0755 and a user-namespaced root could list it.
  chown --reference="/$dir" "$work/$dir/upper"
  chmod --reference="/$dir" "$work/$dir/upper"
  mount -t overlay overlay \
    -o "lowerdir=/$dir,upperdir=$work/$dir/upper,workdir=$work/$dir/work" "/$dir"
done
# /var/lib/sandbox-setup (the workspaces' trusted state, which the host's session
# writes) is the namespace's own too: /var/lib is a tmpfs there with each of its
# entries bound back (an overlay would put podman's storage on an overlay). The bind
# of the real /var/lib used to find them is detached at once: nothing removes through it.
var_lib=$(mktemp -d /var/tmp/set-up-host-var-lib.XXXXXX)
mount --rbind /var/lib "$var_lib"
mount -t tmpfs -o mode=0755,size=1g tmpfs /var/lib
for entry in "$var_lib"/* "$var_lib"/.[!.]*; do
  [ -e "$entry" ] || [ -L "$entry" ] || continue
  name=${entry##*/}
  [ "$name" = sandbox-setup ] && continue
  if [ -L "$entry" ]; then
    cp -P "$entry" "/var/lib/$name"
  elif [ -d "$entry" ]; then
    mkdir "/var/lib/$name" && mount --rbind "$entry" "/var/lib/$name"
  else
    touch "/var/lib/$name" && mount --bind "$entry" "/var/lib/$name"
  fi
done
umount -l "$var_lib" && rmdir "$var_lib"
sed -i -E -e 's/^(UID_MIN|GID_MIN)[[:space:]].*/\1 50000/' \
  -e 's/^(UID_MAX|GID_MAX)[[:space:]].*/\1 59999/' /etc/login.defs
grep -Eq '^UID_MIN[[:space:]]+50000' /etc/login.defs || echo "UID_MIN 50000" >>/etc/login.defs
grep -Eq '^GID_MIN[[:space:]]+50000' /etc/login.defs || echo "GID_MIN 50000" >>/etc/login.defs

# The project installed the README's way (without running the wizard).
apt_line=$(sed -n 's/^apt-get update && \(apt-get install -y [^&]*\)&&.*/\1/p' README.md)
[ -n "$apt_line" ] && DEBIAN_FRONTEND=noninteractive $apt_line >/dev/null
/usr/bin/python3 -m venv /opt/sandbox-setup
/opt/sandbox-setup/bin/pip install -q --disable-pip-version-check . 2> >(grep -v "^WARNING: Location" >&2)
ln -sf /opt/sandbox-setup/bin/sandbox-setup /opt/sandbox-setup/bin/sandbox-launch /usr/local/bin/

# A stand-in Claude for the host's session: it answers --version like Claude Code
# and otherwise keeps working in its workspace until it is stopped.
mkdir -p /opt/host-claude /srv/host-app
cat >/opt/host-claude/claude <<'EOF'
#!/bin/sh
case "$1" in --version) echo "2.1.332 (Claude Code)"; exit 0 ;; esac
while :; do date >"$PWD/.host-session-tick"; sleep 1; done
EOF
chmod 0755 /opt/host-claude/claude

sandbox-setup --headless --mode sandbox --workspace /srv/host-app --agent-user host-agent \
  --claude /opt/host-claude/claude --settings-scope managed --install-claude-shim --yes

# The host's own Claude policy, beside the apply's: the sandbox off for everyone.
mkdir -p /etc/claude-code/managed-settings.d
echo '{"sandbox": {"enabled": false}}' >/etc/claude-code/managed-settings.d/50-host.json
echo "set-up host: managed settings:" /etc/claude-code/managed-settings.json \
  /etc/claude-code/managed-settings.d/*

# setsid: the session is a process group of its own (the cleanup stops it whole); the
# subshell records when and how it ended.
(
  cd /srv/host-app
  setsid sandbox-launch --quiet </dev/null >>"$work/session.log" 2>&1 &
  echo $! >"$work/session.pid"
  wait $! && code=0 || code=$?
  echo "set-up host: the session ended (exit $code) at $(date -u +%T)" >>"$work/session.log"
) &
for _ in $(seq 50); do [ -s "$work/session.pid" ] && break; sleep 0.1; done
session_pid=$(cat "$work/session.pid")
for _ in $(seq 50); do [ -e /srv/host-app/.host-session-tick ] && break; sleep 0.2; done
[ -e /srv/host-app/.host-session-tick ] || { echo "the host session did not start:"; cat "$work/session.log"; exit 1; }
echo "set-up host: a sandbox-launch session is running (pid $session_pid, agent uid $(id -u host-agent))"

# The session must keep working, not only stay alive: a watcher notes, once, when
# the stand-in's tick goes stale (what ran then, and the session's processes).
stale_log=/var/tmp/set-up-host-stale.log
rm -f "$stale_log"
(
  while sleep 5; do
    age=$(( $(date +%s) - $(stat -c %Y /srv/host-app/.host-session-tick 2>/dev/null || echo 0) ))
    if [ "$age" -gt 15 ]; then
      { echo "the tick is ${age}s old at $(date -u +%T)"; ps -eo pid,ppid,uid,stat,lstart,args
        echo "--- session log"; cat "$work/session.log"
        echo "--- the suite's output then"; tail -c 3000 "$work/suite.log"; } >"$stale_log" 2>&1
      break
    fi
  done
) &
watcher=$!

set +e
bash tests/run.sh "$@" 2>&1 | tee "$work/suite.log"
status=${PIPESTATUS[0]}
set -e
kill "$watcher" 2>/dev/null || true
if ! kill -0 "$session_pid" 2>/dev/null; then
  echo "set-up host: the session ended during the suite:"; cat "$work/session.log"; status=1
elif [ -e "$stale_log" ]; then
  echo "set-up host: the session stopped working during the suite (its tick went stale):"
  cat "$stale_log"; status=1
else
  echo "set-up host: the session worked for the whole suite (last tick $(cat /srv/host-app/.host-session-tick))"
fi
exit "$status"
