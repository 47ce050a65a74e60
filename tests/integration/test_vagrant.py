"""The Vagrant VM students meet the testbed through: the Vagrantfile validates, and the
provisioning script's steps (install.sh, the `hpn-testbed` link on sudo's PATH) work, as they
will inside the VM, where the lab sheets (labs/, tests/integration/test_lab_sheets.py) run.

`vagrant` (Debian/Ubuntu package) is installed here by the fixture when absent: nothing else
needs it, so it stays out of scripts/install.sh (which the VM itself runs). No VM is booted:
`vagrant validate --ignore-provider` checks the Vagrantfile without a provider; the provisioner
is run on this machine with SRC set to this clone, VENV to the running venv and BIN to a
temporary directory in place of /usr/local/bin.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
VAGRANTFILE = ROOT / "Vagrantfile"
PROVISION = ROOT / "vagrant" / "provision.sh"


@pytest.fixture(scope="module")
def vagrant() -> str:
    found = shutil.which("vagrant")
    if not found:
        apt = ["apt-get", "-o", "DPkg::Lock::Timeout=600"]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run([*apt, "update", "-qq"], env=env, check=True, capture_output=True, timeout=600)
        subprocess.run([*apt, "install", "-y", "-qq", "--no-install-recommends", "vagrant"], env=env,
                       check=True, capture_output=True, timeout=900)
        found = shutil.which("vagrant")
    assert found, "vagrant is not installed and apt-get could not install it"
    return found


def test_the_vagrantfile_validates(vagrant, tmp_path):
    env = {**os.environ, "VAGRANT_HOME": str(tmp_path / "vagrant.d"), "VAGRANT_CHECKPOINT_DISABLE": "1",
           "VAGRANT_DOTFILE_PATH": str(tmp_path / "dotfile")}      # not .vagrant/ in the clone
    proc = subprocess.run([vagrant, "validate", "--ignore-provider"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and "validated successfully" in proc.stdout, proc.stdout + proc.stderr


def test_the_vm_is_what_the_lab_sheets_assume():
    """The sheets say /vagrant for the clone, `sudo hpn-testbed` on the PATH, 2 cores."""
    text = VAGRANTFILE.read_text()
    assert re.search(r'synced_folder\s+"\.",\s+"/vagrant"', text)
    assert re.search(r'provision\s+"shell",\s+path:\s+"vagrant/provision.sh"', text)
    assert (ROOT / "vagrant" / "provision.sh").is_file()
    assert re.search(r"cpus\s*=\s*2", text)
    assert 'ln -sfn "$VENV/bin/hpn-testbed" "$BIN/hpn-testbed"' in PROVISION.read_text()
    assert "${BIN:-/usr/local/bin}" in PROVISION.read_text()
    subprocess.run(["bash", "-n", str(PROVISION)], check=True, timeout=30)


def test_the_provisioning_steps_run(tmp_path):
    """provision.sh as the VM runs it (here install.sh finds everything in place and is quick)."""
    # install.sh would recreate a venv not made its way: never the one this test runs from
    cfg = (Path(sys.prefix) / "pyvenv.cfg").read_text()
    assert "home = /usr/bin" in cfg and "include-system-site-packages = true" in cfg, \
        f"run from the venv scripts/install.sh makes, not {sys.prefix}"
    env = {**os.environ, "SRC": str(ROOT), "VENV": sys.prefix, "BIN": str(tmp_path)}
    proc = subprocess.run(["bash", str(PROVISION)], env=env, capture_output=True, text=True, timeout=900,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    link = tmp_path / "hpn-testbed"
    assert link.is_symlink() and link.resolve() == (Path(sys.prefix) / "bin" / "hpn-testbed").resolve()
    assert "Teaching labs" in proc.stdout
    listed = subprocess.run([str(link), "lab", "list", "--json"], capture_output=True, text=True, timeout=60,
                            check=False)
    assert listed.returncode == 0 and '"number": 6' in listed.stdout, listed.stdout + listed.stderr
