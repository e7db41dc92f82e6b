"""Chakra execution traces (ASTRA-sim's workload format) in and out of hcsim workload graphs.

A trace is one file per rank, ``NAME.RANK.et``: a ``GlobalMetadata`` then ``Node`` messages
of the schema ``et_def.proto`` (mlcommons/chakra), compiled into :mod:`.et_def_pb2`.

* :mod:`.files`: finding the rank files, their varint framing, node attributes;
* :mod:`.read` and :mod:`.assemble`: :func:`read_chakra`, per-rank graphs merged into one workload;
* :mod:`.write`: :func:`write_chakra`, a workload as per-rank files.

Invariant: writing then reading gives back the same graph (what Chakra has no field for
rides in ``hcsim_*`` attributes). protobuf is imported only when a trace is read or
written. Details: docs/formats.md.
"""

from hcsim.formats.chakra.files import chakra_files, is_chakra
from hcsim.formats.chakra.read import read_chakra
from hcsim.formats.chakra.write import write_chakra

__all__ = ["chakra_files", "is_chakra", "read_chakra", "write_chakra"]
