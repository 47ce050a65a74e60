"""hpn-testbed: LLM-training data-center fabrics on Mininet + Open vSwitch with an os-ken controller.

Mininet is not a pip dependency: Debian/Ubuntu ship it in the system Python
(/usr/lib/python3/dist-packages), so scripts/install.sh makes the venv with
--system-site-packages from /usr/bin/python3.
"""
from setuptools import find_packages, setup

PACKAGES = ["testbed", "controller", "scenarios"]

setup(
    name="hpn-testbed",
    version="0.1.0",
    description="Emulated LLM-training data-center fabrics (HPN, multi-plane/multi-rail fat trees, "
                "3-tier Clos) on Mininet + Open vSwitch with an os-ken controller",
    python_requires=">=3.10",   # tests/unit/test_python_versions.py holds the code to it
    packages=find_packages(include=PACKAGES + [p + ".*" for p in PACKAGES]),
    package_data={"testbed": ["model/families/*.toml",    # the file family's default topology
                           "cli/top.html"]},           # top --web's page
    install_requires=[
        "os-ken>=4.0",   # 4.x: native-thread hub, no osken-manager (controller/launcher.py)
        "scapy",         # reads and builds frames: the tests check our hand-built ARP with it
        "pyroute2",
        "rich",
        "matplotlib",
        "tomli>=1.1; python_version < '3.11'",   # tomllib's own parser, before 3.11 (core/compat.py)
    ],
    extras_require={"test": ["pytest>=7",   # pytest.ini uses `pythonpath`, new in 7.0
                             "pexpect",   # drives `up --cli` through a pseudo-terminal
                             "vermin>=1.6",  # the oldest Python the code needs (test_python_versions)
                             # docs/experiment.schema.json against experiments/ (test_experiment_schema)
                             "jsonschema",
                             "ruff"],      # the repository's ruff.toml, run by the unit tests
                    # the torch.distributed example job (examples/jobs, docs/jobs.md): take the
                    # CPU wheel (--index-url https://download.pytorch.org/whl/cpu), as
                    # scripts/install.sh does; a CUDA wheel is gigabytes the testbed never uses
                    "torch": ["torch>=2.1"]},
    entry_points={"console_scripts": ["hpn-testbed = testbed.cli:main"],
                  # the fixtures and markers of users' own CI tests (docs/extending.md)
                  "pytest11": ["hpn_testbed = testbed.pytest_plugin"]},
)
