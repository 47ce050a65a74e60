"""What differs between the Python versions the testbed supports (3.10 to 3.13), in one place.

`tomllib` joined the standard library in 3.11; on 3.10 the same parser is the `tomli` package
(setup.py installs it there only), with the same API and the same `TOMLDecodeError`.
"""
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["tomllib"]
