"""Imported from a .pth file at interpreter start: preload libsimgrid so ``import simgrid`` works.

Never raises: a broken or missing SimGrid must not stop Python itself from starting.
"""

try:
    import ctypes as _ctypes

    from hcsim.simgrid_runtime import libsimgrid_path as _path

    _ctypes.CDLL(_path(), mode=_ctypes.RTLD_GLOBAL)
except Exception:  # noqa: BLE001, S110 - see docstring
    pass
