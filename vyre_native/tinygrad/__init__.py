"""tinygrad on vyre_native: the ``VN`` device (``DEV=VN``).

Installed with the ``tinygrad`` extra (``pip install ".[tinygrad]"`` from a checkout, or
``pip install "<the wheel>[tinygrad]"``), which pins the tinygrad release this device is
tested with. tinygrad finds a device by importing
``tinygrad.runtime.ops_<name>``; that namespace is tinygrad's own (a regular package, so
no namespace-package merge), and tinygrad 0.14 reads no entry points. Two registrations,
both of which make ``tinygrad.runtime.ops_vn`` this package's ``ops_vn`` module:

- the wheel installs ``vyre_native_tinygrad.pth`` into site-packages: at interpreter
  start-up it appends one finder to ``sys.meta_path`` that answers only for
  ``tinygrad.runtime.ops_vn`` (and imports nothing until asked), so ``DEV=VN python
  script.py`` works with no code change;
- importing this package registers the module directly (for ``python -S`` or an
  environment that skips ``.pth`` files).

It relies on three things: ``site`` processing ``.pth`` files; tinygrad's
``Device.get_class`` calling ``importlib.import_module("tinygrad.runtime.ops_vn")`` and
taking the member whose lower-cased name is ``vndevice``; and importlib consulting
``sys.meta_path`` finders after its path finder found no file (so a tinygrad that ever
shipped its own ``ops_vn.py`` would win).
"""

from __future__ import annotations

import sys

try:
    import tinygrad as _tinygrad  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "vyre_native.tinygrad needs tinygrad, which is not installed. "
        'Fix: pip install tinygrad==0.14.0 (the release this device is tested with; from a checkout, '
        'pip install ".[tinygrad]" installs it).'
    ) from exc

from . import ops_vn
from .ops_vn import VNAllocator, VNDevice, VNGraph, VNProgram, VNRenderer

MODULE = "tinygrad.runtime.ops_vn"
sys.modules.setdefault(MODULE, ops_vn)

__all__ = ["VNAllocator", "VNDevice", "VNGraph", "VNProgram", "VNRenderer"]
