"""Arguments of the CLI's commands (testbed/cli/shell/cli.py): parsed like the command line's, and
refused with one line instead of a usage block or an exit."""
from __future__ import annotations

import argparse
import shlex

MAX_MESSAGE = 300   # characters of one answer line


class Usage(Exception):
    """A command typed wrong; its message is the one line the CLI answers."""


class ShellParser(argparse.ArgumentParser):
    """argparse for one CLI command: an error raises Usage (the session goes on), never exits."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("add_help", False)        # `help COMMAND` describes a command
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        raise Usage(f"{' '.join(message.split())}; usage: {self.usage_line()}")

    def exit(self, status=0, message=None):
        raise Usage(one_line(message or f"usage: {self.usage_line()}"))

    def usage_line(self) -> str:
        return " ".join(self.format_usage().split()).removeprefix("usage: ")

    def parse(self, line: str) -> argparse.Namespace:
        """Split `line` like a shell would, then parse it."""
        try:
            words = shlex.split(line)
        except ValueError as e:   # an unclosed quote
            raise Usage(f"{e}; usage: {self.usage_line()}") from None
        return self.parse_args(words)


def one_line(message: object) -> str:
    """A message (an exception's, a command's output) as one line of at most MAX_MESSAGE characters."""
    text = " ".join(str(message).split())
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 3] + "..."


def no_arguments(command: str, line: str) -> None:
    if line.strip():
        raise Usage(f"{command} takes no arguments")


def positive(kind):
    """An argparse type: a number of `kind` (int, float) above zero."""
    def convert(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text} must be above 0")
        return value
    convert.__name__ = kind.__name__
    return convert


def at_least_zero(text: str) -> int:
    """An argparse type: a count, 0 meaning `until Ctrl-C`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} must be 0 (until Ctrl-C) or more")
    return value
