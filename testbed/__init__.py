"""hpn-testbed: emulate the networks that train large language models on Mininet and Open vSwitch."""
__version__ = "0.1.0"
