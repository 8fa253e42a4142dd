# The owner of a handle's reference to its C object (csrc/python/owner.c).
from typing import Any, Final

SLOT_SIZE: Final[int]

class Owner:
    """Owns what a creating call writes into its storage; releases it when deallocated."""

    @property
    def held(self) -> bool: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

def bind(address: int, /) -> None: ...

def record_buffers(
    pipeline: Any, inputs: Any, outputs: Any, workgroups: Any, clear_outputs: Any, /
) -> Owner | int | None: ...
def bind_launch(address: int, buffer_type: type, /) -> None: ...
