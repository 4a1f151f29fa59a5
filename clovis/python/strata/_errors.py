"""Errors of the binding: every Clovis error is a StrataError (an OSError)
carrying the errno and Strata's message, which names the entity, key or
field at fault (clovis_errmsg() / clovis_op_errmsg())."""
from __future__ import annotations

import errno as _errno

from . import _strata

__all__ = ["StrataError", "StrataArgumentError", "make_error", "errno_name"]

_CLOVIS_CODES = {
    _strata.ECORRUPT: "ECORRUPT",
    _strata.EVERSION: "EVERSION",
    _strata.ECHECKSUM: "ECHECKSUM",
    _strata.ESTATE: "ESTATE",
}


def errno_name(code: int) -> str:
    """The symbolic name of an errno or Clovis code ("ENOENT",
    "ECORRUPT"), or its number as text."""
    return _CLOVIS_CODES.get(code) or _errno.errorcode.get(code, str(code))


class StrataError(OSError):
    """A Clovis call or op failed.

    ``errno`` is the positive error code (an errno such as ``errno.ENOENT``,
    or one of Clovis' own codes: ``strata.ECORRUPT`` ...), ``strerror`` the
    message: what the binding did (entity, op) followed by Strata's own
    message.  ``code_name`` is the symbolic name ("ENOENT").
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)

    @property
    def code_name(self) -> str:
        """The symbolic name of ``errno``."""
        return errno_name(self.errno or 0)

    def __str__(self) -> str:
        return "[%s] %s" % (self.code_name, self.strerror)


class StrataArgumentError(StrataError, ValueError):
    """Strata refused an argument (EINVAL, E2BIG): both a StrataError and
    a ValueError."""


_ARG_CODES = (_errno.EINVAL, _errno.E2BIG)


def make_error(code: int, message: str) -> StrataError:
    """The exception for Clovis error ``-code`` (the C module raises what
    this returns)."""
    if code in _ARG_CODES:
        return StrataArgumentError(code, message)
    return StrataError(code, message)


_strata._set_error_factory(make_error)
