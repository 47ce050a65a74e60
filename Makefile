# hpn-testbed. Run as root from a fresh clone:
#   sudo make demo        install what is missing, then the tour of headline scenarios
#   sudo make test        unit + integration tests, then the full-kernel tests
#   sudo make test-fast   unit + integration tests only
#   sudo make test-lane   the full-kernel tests only
#   sudo make test-distro the distro lane (tests/distro/run): a fresh Debian root made with
#                         debootstrap (cached), run in its own namespaces, does what a newcomer
#                         does: clone, make setup, doctor, up --check, two quick scenarios,
#                         servers up/down, the unit tests, vagrant/provision.sh. Not part of
#                         `make test` (2.5-3.5 min warm, +1 min from an empty cache; docs/testing.md, "Distro lane")
#   sudo make tour-lane   the tour's scenarios on the kernel paths, in the VM lane (not part of
#                         `make test`: about 40-60 min under QEMU TCG); one table at the end
#   sudo make bench       every bench/*.py
#   sudo make clean       remove whatever testbed runs left behind
#
# Variables (command line or environment):
#   VENV      the project's venv (default: ./.venv), made by scripts/install.sh
#   PYTEST_ARGS  extra pytest arguments, e.g. PYTEST_ARGS='-k hpn -x'
#   HPN_LANE  where the full-kernel tests (tests/fullkernel, marker `fullkernel`) run:
#     auto  (default) on this machine if its kernel has (or can load) openvswitch, bonding and
#           sch_netem, as on a stock Debian/Ubuntu kernel (CI runners, Vagrant VMs); otherwise
#           in the VM lane
#     vm    always in the VM lane: tests/vm/run-lane boots a Debian kernel under QEMU. The tree
#           is read-only there, so its bytecode is compiled here first. Inside, CI=true: the
#           lane exists to provide the kernel paths, so a skipped test there is a failure
#     host  always on this machine
#     off   not at all
#   Nothing happens while tests/fullkernel does not exist.
#   DISTRO    the distro lane's root: trixie (default) or bookworm
#   DISTRO_ARGS  more arguments for tests/distro/run: --full (CI=true make test-fast inside
#             instead of the unit tests), --fresh (rebuild the cached root)
#   TOUR_LANE_ARGS  arguments of tests/vm/tour-lane, which `make tour-lane` runs: scenario names
#           (default: the tour), --out DIR (default out/tour-lane), --batch N (scenarios per VM
#           boot, default 4), --lock FILE (an flock held per boot only, on a shared machine),
#           --against DIR (a userspace run's NAME.json files, shown alongside), e.g.
#           TOUR_LANE_ARGS='--against out/ --lock /tmp/fabric.lock'. The lane's own lowered
#           rates per scenario are listed in tests/vm/tour-lane (LANE_SETTINGS).

VENV ?= $(CURDIR)/.venv
HPN_LANE ?= auto
PYTEST_ARGS ?=
DISTRO ?= trixie
DISTRO_ARGS ?=
TOUR_LANE_ARGS ?=
PYTEST = $(VENV)/bin/python -m pytest
FULLKERNEL_MODULES = openvswitch bonding sch_netem

.PHONY: setup demo test test-fast test-lane test-distro tour-lane bench clean
.DEFAULT_GOAL := setup

setup:
	@VENV='$(VENV)' bash scripts/install.sh

demo: setup
	$(VENV)/bin/hpn-testbed run

# unit + integration (pytest.ini: testpaths, -ra, no cache), the 25 slowest listed (CI time is
# budgeted). Exit 5 (no tests ran) fails too.
define run_tests
	$(PYTEST) tests/unit tests/integration --durations=25 $(PYTEST_ARGS)
endef

# The full-kernel tests, where HPN_LANE says.
define run_lane
	@set -e; \
	if [ ! -d tests/fullkernel ]; then echo "make: no tests/fullkernel, no full-kernel tests to run"; exit 0; fi; \
	mode='$(HPN_LANE)'; \
	if [ "$$mode" = auto ]; then \
	  mode=host; \
	  for m in $(FULLKERNEL_MODULES); do \
	    [ -d /sys/module/$$m ] || modprobe -q $$m 2>/dev/null || { mode=vm; break; }; \
	  done; \
	  echo "make: HPN_LANE=auto: full-kernel tests run on the $$mode"; \
	fi; \
	case "$$mode" in \
	  host) set -x; $(PYTEST) -m fullkernel tests/fullkernel -q $(PYTEST_ARGS) ;; \
	  vm) $(VENV)/bin/python -m compileall -q testbed controller tests || true; \
	      set -x; tests/vm/run-lane --env CI=true -- $(VENV)/bin/python -m pytest -m fullkernel tests/fullkernel -q $(PYTEST_ARGS) ;; \
	  off) echo "make: HPN_LANE=off, full-kernel tests not run" ;; \
	  *) echo "make: HPN_LANE must be auto, vm, host or off (not '$$mode')" >&2; exit 2 ;; \
	esac
endef

test: setup
	@bash scripts/install.sh --test
	$(run_tests)
	$(run_lane)

test-fast: setup
	@bash scripts/install.sh --test
	$(run_tests)

test-lane: setup
	$(run_lane)

# Needs nothing of this machine's install: the lane installs debootstrap if missing and runs
# the install inside its root.
test-distro:
	tests/distro/run $(DISTRO) $(DISTRO_ARGS)

tour-lane: setup
	VENV='$(VENV)' tests/vm/tour-lane $(TOUR_LANE_ARGS)

bench: setup
	@set -e; found=; \
	for f in bench/*.py; do \
	  [ -f "$$f" ] || continue; found=1; \
	  echo "== $$f"; $(VENV)/bin/python "$$f"; \
	done; \
	[ -n "$$found" ] || echo "make: no bench/*.py"

clean: setup
	$(VENV)/bin/hpn-testbed clean
