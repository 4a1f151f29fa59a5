"""Entity ids: 128-bit, written "HI:LO" in hex or "@name" (hashed by
clovis_id_parse())."""
from __future__ import annotations

from typing import NamedTuple, Tuple, Union

from . import _strata

__all__ = ["Id", "IdLike", "as_id"]


class Id(NamedTuple):
    """A 128-bit entity id (struct clovis_id).  ``str(id)`` is "hi:lo" in
    lower-case hex, as clovis_id_format() writes it."""

    hi: int
    lo: int

    def __str__(self) -> str:
        return "%x:%x" % (self.hi, self.lo)

    def __int__(self) -> int:
        return (self.hi << 64) | self.lo

    @classmethod
    def parse(cls, text: str) -> "Id":
        """Parse "HI:LO" (hex, optional 0x) or "@name" (clovis_id_parse();
        raises StrataArgumentError for anything else)."""
        if not isinstance(text, str):
            raise TypeError("id: text must be str, not %s"
                            % type(text).__name__)
        hi, lo = _strata.id_parse(text)
        return cls(hi, lo)


IdLike = Union[Id, str, int, Tuple[int, int]]

_U64 = (1 << 64) - 1


def as_id(value: IdLike, field: str = "id") -> Id:
    """An Id from an Id, a (hi, lo) pair, a 128-bit int or text ("HI:LO",
    "@name").  TypeError / ValueError name the field."""
    if isinstance(value, Id):
        return value
    if isinstance(value, str):
        return Id.parse(value)
    if isinstance(value, bool):
        raise TypeError("%s: must be an Id, str, int or (hi, lo), not bool"
                        % field)
    if isinstance(value, int):
        if value < 0 or value >> 128:
            raise ValueError("%s: %d is not a 128-bit id" % (field, value))
        return Id(value >> 64, value & _U64)
    if isinstance(value, tuple) and len(value) == 2:
        hi, lo = value
        for part, v in (("hi", hi), ("lo", lo)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError("%s: %s must be an int" % (field, part))
            if v < 0 or v > _U64:
                raise ValueError("%s: %s %d is not a 64-bit value"
                                 % (field, part, v))
        return Id(hi, lo)
    raise TypeError("%s: must be an Id, str, int or (hi, lo), not %s"
                    % (field, type(value).__name__))
