"""Typed errors. Every failure a user can cause is one of these: a message naming what is wrong and a
hint saying what would work. The CLI prints them as one line and exits 2; the TUI shows them inline."""
from __future__ import annotations


class ZeroTuiError(Exception):
    """A problem the user can fix. ``message`` names what is wrong, ``hint`` what would work, ``field``
    the Plan field it is about when there is one (the wizard shows the error on that field)."""

    exit_code = 2

    def __init__(self, message: str, hint: str = "", field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.field = field

    #: The longest line an error prints: a message quoting a hostile file's content is cut, not 4.6 MB.
    MAX_LINE = 600

    def one_line(self) -> str:
        line = f"{self.message} ({self.hint})" if self.hint else self.message
        line = " ".join(line.splitlines())  # one line, whatever a quoted value held
        return line if len(line) <= self.MAX_LINE else line[: self.MAX_LINE - 3] + "..."

    def __str__(self) -> str:  # so logging and f-strings show the hint too
        return self.one_line()


class PlanError(ZeroTuiError):
    """A plan (YAML file, CLI options or wizard answers) that is malformed or self-contradictory."""


class PresetError(ZeroTuiError):
    """A preset that cannot be found, read or saved."""


class ModelError(ZeroTuiError):
    """A model that cannot be found or understood."""


class DataError(ZeroTuiError):
    """A dataset that cannot be read or has nothing usable in it."""


class HardwareError(ZeroTuiError):
    """The machine lacks what the plan needs (a GPU, RAM, a writable NVMe path, ...)."""


class RunError(ZeroTuiError):
    """A run directory that is missing, malformed, or in the wrong state for the request."""


class ConfigImportError(ZeroTuiError):
    """A ds_config.json that cannot be turned into a plan."""


class StorageError(HardwareError):
    """A folder the machine will not let us write: the disk is full or over quota, or it is read-only.
    The machine's state rather than the input, so exit 1 (as for an OSError the CLI catches), and
    nothing is left half-written."""

    exit_code = 1
