"""Type aliases the public signatures share."""

from __future__ import annotations

from typing import Any, SupportsIndex, TypeAlias

#: what numpy.dtype() accepts: numpy.float32, "u4", numpy.dtype(...)
DTypeLike: TypeAlias = Any
#: an int or a sequence of ints
ShapeLike: TypeAlias = SupportsIndex | tuple[SupportsIndex, ...] | list[SupportsIndex]
