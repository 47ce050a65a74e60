"""Errors the CLI turns into one clear line and an exit status."""


class TestbedError(Exception):
    """Something went wrong at run time (exit status 1)."""
    exit_status = 1


class ParamError(TestbedError):
    """Bad input, found before anything was created (exit status 2)."""
    exit_status = 2
