#!/bin/bash
# Install what hpn-testbed needs, idempotently: Debian 12, Ubuntu 22.04 / 24.04, as root.
#
#   sudo scripts/install.sh            (or: sudo make setup)
#   VENV=/some/where scripts/install.sh
#
# Steps, each done only when needed and announced with one line:
#   1. apt packages (checked with dpkg-query; `apt-get update` only if one is missing)
#   2. a venv at $VENV (default <project>/.venv) made from /usr/bin/python3 with
#      --system-site-packages: Debian/Ubuntu's mininet lives in the system Python, and a
#      python3 first on PATH (pyenv, conda) is not that Python
#   3. `pip install -e '.[test]'` into it, only when setup.py, pyproject.toml (or the project's path) changed
#      since the last install: a stamp file in the venv records both
#   4. Open vSwitch started if `ovs-vsctl show` does not answer
# A second run with everything in place prints nothing and takes well under a second.
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
case $VENV in /*) ;; *) VENV=$PWD/$VENV ;; esac
PYTHON=/usr/bin/python3
STAMP=$VENV/.hpn-testbed-installed
APT_PKGS=(mininet openvswitch-switch iperf3 iputils-ping nftables ethtool tcpdump
          python3-venv python3-pip iproute2 kmod procps openssh-server openssh-client sudo)

say() { echo "install: $*"; }
die() { echo "install: error: $*" >&2; exit 1; }
is_root() { [ "$(id -u)" = 0 ]; }
# Run a step quietly; show its output only if it fails.
quiet() {
  local log rc=0
  log=$(mktemp)
  "$@" </dev/null >"$log" 2>&1 || rc=$?
  [ "$rc" = 0 ] || cat "$log" >&2
  rm -f "$log"
  return "$rc"
}

# --- 1. apt packages ----------------------------------------------------------------------
installed=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${APT_PKGS[@]}" 2>/dev/null |
            awk '$1 == "ii" {print $2}' || true)
missing=()
for p in "${APT_PKGS[@]}"; do
  grep -qxF "$p" <<<"$installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  is_root || die "missing apt packages (${missing[*]}); run as root: sudo $0"
  export DEBIAN_FRONTEND=noninteractive
  APT=(apt-get -o DPkg::Lock::Timeout=600)   # a fresh VM may still run unattended-upgrades
  say "apt-get update (missing: ${missing[*]})"
  quiet "${APT[@]}" update || die "apt-get update failed"
  say "apt-get install ${missing[*]}"
  quiet "${APT[@]}" install -y --no-install-recommends "${missing[@]}" || die "apt-get install failed"
fi

# --- 1b. netem on a full kernel --------------------------------------------------------------
# Ubuntu keeps sch_netem apart, in linux-modules-extra-KVER (a CI runner's or a Vagrant box's
# kernel): where the running kernel has modules but cannot load netem, install that package for
# the kernel datapath's netem paths. A kernel without loadable modules (a microVM's) is left
# alone: the testbed falls back, and the full-kernel tests run in the VM lane.
KVER=$(uname -r)
if [ -d "/lib/modules/$KVER/kernel" ] && ! modprobe -n -q sch_netem 2>/dev/null && is_root &&
   [ -f /etc/os-release ] && grep -qi '^ID=ubuntu' /etc/os-release; then
  say "apt-get install linux-modules-extra-$KVER (the kernel has no sch_netem)"
  quiet apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "linux-modules-extra-$KVER" ||
    echo "install: note: linux-modules-extra-$KVER not installed; netem paths fall back" >&2
fi

# --- 2. venv ------------------------------------------------------------------------------
# A usable venv: made from /usr/bin/python3 (home = /usr/bin) and seeing the system site-packages.
venv_ok() {
  [ -x "$VENV/bin/python" ] && [ -f "$VENV/pyvenv.cfg" ] &&
    grep -Eq '^home *= */usr/bin *$' "$VENV/pyvenv.cfg" &&
    grep -Eq '^include-system-site-packages *= *true *$' "$VENV/pyvenv.cfg"
}
if ! venv_ok; then
  if [ -e "$VENV" ]; then
    [ -f "$VENV/pyvenv.cfg" ] || die "$VENV exists and is not a venv; move it away or set VENV="
    say "recreating $VENV (not a --system-site-packages venv of $PYTHON)"
    rm -rf "$VENV"
  else
    say "creating venv $VENV"
  fi
  quiet "$PYTHON" -m venv --system-site-packages "$VENV" || die "could not create $VENV"
fi

# --- 3. the project, editable -------------------------------------------------------------
want="$(cat "$ROOT/setup.py" "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1) $ROOT"
if [ "$(cat "$STAMP" 2>/dev/null || true)" != "$want" ]; then
  say "pip install -e '.[test]' into $VENV"
  rm -f "$STAMP"
  (cd "$ROOT" && quiet env PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
     "$VENV/bin/python" -m pip install -q -e '.[test]') || die "pip install failed"
  quiet "$VENV/bin/python" -c 'import mininet.net' ||
    die "mininet is not importable from $VENV (is the apt package mininet installed?)"
  echo "$want" >"$STAMP"
fi

# --- 4. Open vSwitch ----------------------------------------------------------------------
if ! ovs-vsctl --timeout=3 show >/dev/null 2>&1; then
  if ! is_root; then
    echo "install: note: Open vSwitch is not answering; not root, so not starting it" >&2
  else
    OVS_CTL=/usr/share/openvswitch/scripts/ovs-ctl
    # Under systemd, start the unit (it runs ovs-ctl itself and keeps track of the daemons);
    # elsewhere (containers, the VM lane) run ovs-ctl directly.
    if [ -d /run/systemd/system ] || [ ! -x "$OVS_CTL" ]; then
      say "starting Open vSwitch (systemctl start openvswitch-switch)"
      quiet systemctl start openvswitch-switch || die "could not start openvswitch-switch"
    else
      say "starting Open vSwitch ($OVS_CTL start)"
      quiet "$OVS_CTL" start || die "ovs-ctl start failed"
    fi
    ovs-vsctl --timeout=10 show >/dev/null 2>&1 || die "Open vSwitch started but does not answer"
  fi
fi
