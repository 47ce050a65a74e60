#!/bin/bash
# Install what hpn-testbed needs, idempotently: Debian 12/13, Ubuntu 22.04 / 24.04, as root.
#
#   sudo scripts/install.sh            (or: sudo make setup)
#   VENV=/some/where scripts/install.sh
#   scripts/install.sh --servers       the multi-server mode's packages (`hpn-testbed servers up`
#                                      runs this itself the first time): installed with a
#                                      policy-rc.d that refuses every service, and sshd's units
#                                      disabled afterwards, so no sshd is started or enabled
#   scripts/install.sh --test          what only the tests need (a headless browser; `make test`)
#   scripts/install.sh --packages [default|servers|test|all]   print the apt packages, install nothing
#
# Steps, each done only when needed and announced with one line:
#   1. apt packages (checked with dpkg-query; `apt-get update` only if one is missing; if the
#      update fails, offline say, the install is tried with the package lists there are)
#   2. a venv at $VENV (default <project>/.venv) made from /usr/bin/python3 with
#      --system-site-packages: Debian/Ubuntu's mininet lives in the system Python, and a
#      python3 first on PATH (pyenv, conda) is not that Python
#   3. `pip install -e '.[test]'` into it, only when setup.py, pyproject.toml (or the project's path) changed
#      since the last install: a stamp file in the venv records both; then torch's CPU wheel
#      (the `.[torch]` extra: the example jobs and their integration test, docs/jobs.md) if the
#      venv has no torch: torch==2.13.0+cpu from what pip finds, else from $TORCH_INDEX
#      (default PyTorch's CPU index); HPN_NO_TORCH=1 skips it
#   4. Open vSwitch started if `ovs-vsctl show` does not answer
# A second run with everything in place prints nothing and takes well under a second.
# What it changes on the machine, and how to undo it: docs/install.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
case $VENV in /*) ;; *) VENV=$PWD/$VENV ;; esac
PYTHON=/usr/bin/python3
STAMP=$VENV/.hpn-testbed-installed
# What the default paths need (every `up`, `run`, test). Nothing here starts a service
# except Open vSwitch, which the testbed needs running.
APT_PKGS=(mininet openvswitch-switch iperf3 iputils-ping nftables ethtool tcpdump
          python3-venv python3-pip iproute2 kmod procps
          openmpi-bin python3-mpi4py)   # MPI jobs (docs/jobs.md): same names on Debian 12 and 13
# What only `hpn-testbed servers up` needs (its own sshd per namespace server, ssh, sudo for
# Mininet Cluster Edition's remote commands): installed by `--servers`, on first use.
SERVER_PKGS=(openssh-server openssh-client sudo)
# What only the tests need beyond those: a headless browser for `top --web`'s page
# (tests/integration/test_top.py): installed by `--test` (`make test` runs it).
TEST_PKGS=(chromium)

say() { echo "install: $*"; }
die() { echo "install: error: $*" >&2; exit 1; }
is_root() { [ "$(id -u)" = 0 ]; }
# Run a step quietly; show its output only if it fails.
# Run a command that leaves daemons behind with none of our open files but 0-2: a daemon that
# inherits the caller's fd of an flock (`flock LOCK make test`) would hold that lock for ever.
detached() {
  ( for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}; [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-"
    done
    exec "$@" )
}

quiet() {
  local log rc=0
  log=$(mktemp)
  "$@" </dev/null >"$log" 2>&1 || rc=$?
  [ "$rc" = 0 ] || cat "$log" >&2
  rm -f "$log"
  return "$rc"
}

# --- 1. apt packages ----------------------------------------------------------------------
missing_of() {   # the packages of "$@" that are not installed
  local installed p
  installed=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "$@" 2>/dev/null |
              awk '$1 == "ii" {print $2}' || true)
  for p in "$@"; do grep -qxF "$p" <<<"$installed" || echo "$p"; done
}
apt_install() {   # apt_install PKG...: update the lists, then install without recommends
  is_root || die "missing apt packages ($*); run as root: sudo $0${MODE:+ $MODE}"
  export DEBIAN_FRONTEND=noninteractive
  local apt=(apt-get -o DPkg::Lock::Timeout=600)   # a fresh VM may still run unattended-upgrades
  say "apt-get update (missing: $*)"
  # Offline (or a mirror down), the lists already there and apt's cache may still do.
  quiet "${apt[@]}" update || say "apt-get update failed; trying with the package lists there are"
  say "apt-get install $*"
  quiet "${apt[@]}" install -y --no-install-recommends "$@" || die "apt-get install $* failed"
  # Written down, so that undoing the install removes exactly these (docs/install.md: "What the install
  # changes"): apt-get purge $(cat /var/lib/hpn-testbed/apt-installed)
  mkdir -p /var/lib/hpn-testbed && printf '%s\n' "$@" >>/var/lib/hpn-testbed/apt-installed
}

MODE=
case "${1:-}" in
  "") ;;
  --packages)
    case "${2:-default}" in
      default) echo "${APT_PKGS[*]}" ;;
      servers) echo "${SERVER_PKGS[*]}" ;;
      test) echo "${TEST_PKGS[*]}" ;;
      all) echo "${APT_PKGS[*]} ${SERVER_PKGS[*]} ${TEST_PKGS[*]}" ;;
      *) die "--packages takes default, servers, test or all" ;;
    esac
    exit 0 ;;
  --servers)
    MODE=--servers
    mapfile -t missing < <(missing_of "${SERVER_PKGS[@]}")
    [ "${#missing[@]}" -gt 0 ] || exit 0
    is_root || die "missing apt packages (${missing[*]}); run as root: sudo $0 --servers"
    # No service may start while they install: a policy-rc.d answering 101 (invoke-rc.d and
    # deb-systemd-invoke ask it), ours only for the install (one already there is put back).
    POLICY=/usr/sbin/policy-rc.d
    [ ! -e "$POLICY" ] || mv "$POLICY" "$POLICY.hpn-testbed-saved"
    trap 'rm -f "$POLICY"; [ ! -e "$POLICY.hpn-testbed-saved" ] || mv "$POLICY.hpn-testbed-saved" "$POLICY"' EXIT
    printf '#!/bin/sh\n# hpn-testbed: installing packages, no service starts\nexit 101\n' >"$POLICY"
    chmod 755 "$POLICY"
    apt_install "${missing[@]}"
    # Nor may sshd start at the next boot: the package enabled its units (Ubuntu: ssh.socket).
    if grep -qxF openssh-server < <(printf '%s\n' "${missing[@]}"); then
      if command -v systemctl >/dev/null 2>&1; then
        quiet systemctl disable ssh.service ssh.socket 2>/dev/null ||
          quiet systemctl disable ssh.service || true
      elif command -v update-rc.d >/dev/null 2>&1; then
        quiet update-rc.d ssh disable || true
      fi
    fi
    say "installed ${missing[*]}; no service started or enabled (sshd runs only in the namespace servers)"
    exit 0 ;;
  --test)
    mapfile -t missing < <(missing_of "${TEST_PKGS[@]}")
    [ "${#missing[@]}" = 0 ] || apt_install "${missing[@]}"
    exit 0 ;;
  *) die "usage: $0 [--servers | --test | --packages [default|servers|test|all]]" ;;
esac

mapfile -t missing < <(missing_of "${APT_PKGS[@]}")
[ "${#missing[@]}" = 0 ] || apt_install "${missing[@]}"

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
# torch for the example jobs, CPU only (never a CUDA wheel): checked by a lookup, not an import
if [ -z "${HPN_NO_TORCH:-}" ] &&
   ! "$VENV/bin/python" -c 'import importlib.util, sys; sys.exit(not importlib.util.find_spec("torch"))'; then
  # the CPU build by its exact version: a wheel the machine's pip already finds (its find-links),
  # else PyTorch's CPU index; a bare `torch` would take a CUDA build of several GB
  torch_req="torch==${TORCH_VERSION:-2.13.0}+cpu"
  say "pip install $torch_req into $VENV"
  env PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install -q \
      "$torch_req" </dev/null >/dev/null 2>&1 ||
    quiet env PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install -q "$torch_req" \
      --index-url "${TORCH_INDEX:-https://download.pytorch.org/whl/cpu}" || die "pip install $torch_req failed"
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
      quiet detached systemctl start openvswitch-switch || die "could not start openvswitch-switch"
    else
      say "starting Open vSwitch ($OVS_CTL start)"
      quiet detached "$OVS_CTL" start || die "ovs-ctl start failed"
    fi
    ovs-vsctl --timeout=10 show >/dev/null 2>&1 || die "Open vSwitch started but does not answer"
  fi
fi
