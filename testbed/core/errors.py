"""Errors the CLI turns into one clear line and an exit status."""


class TestbedError(Exception):
    """Something went wrong at run time (exit status 1)."""
    exit_status = 1


class ParamError(TestbedError):
    """Bad input, found before anything was created (exit status 2)."""
    exit_status = 2


class PartLost(TestbedError):
    """A part of a running fabric was lost (its controller died, a switch lost its controller
    connection): nothing measured from then on is a verdict."""
