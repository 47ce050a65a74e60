#!/bin/bash
# Vagrant provisioner (runs as root in the VM): install hpn-testbed's packages and venv, start
# Open vSwitch, and say how to run the demo. Safe to re-run (`vagrant provision`).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SRC=${SRC:-/vagrant}                    # the synced folder (tests/integration/test_vagrant.py: the clone)
VENV=${VENV:-/home/vagrant/.hpn-venv}   # outside the synced folder
BIN=${BIN:-/usr/local/bin}

if ! command -v make >/dev/null 2>&1; then
  echo "provision: installing make"
  apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends make >/dev/null
fi
VENV=$VENV bash "$SRC/scripts/install.sh"
# `sudo hpn-testbed ...` from anywhere (/usr/local/bin is on sudo's secure_path).
ln -sfn "$VENV/bin/hpn-testbed" "$BIN/hpn-testbed"

cat <<MSG
hpn-testbed is installed (venv $VENV, Open vSwitch running). Run the demo with:
  vagrant ssh
  cd $SRC && sudo make demo VENV=$VENV
Or run anything: sudo hpn-testbed --help. Tests: cd $SRC && sudo make test VENV=$VENV
Teaching labs: $SRC/labs/ (hpn-testbed lab list)
MSG
