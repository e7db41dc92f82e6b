"""Imported from a .pth file at interpreter start: preload libsimgrid so ``import simgrid`` works.

``scripts/bootstrap.sh`` installs the ``.pth`` file into the venv; the extension pip
builds has no rpath to ``libsimgrid.so``, so it is loaded here by absolute path
(:func:`hcsim.simgrid_runtime.libsimgrid_path`). Never raises: a broken or missing
SimGrid must not stop Python itself from starting.
"""

try:
    import ctypes as _ctypes

    from hcsim.simgrid_runtime import libsimgrid_path as _path

    _ctypes.CDLL(_path(), mode=_ctypes.RTLD_GLOBAL)
except Exception:  # noqa: BLE001, S110 - see docstring
    pass
