"""File formats of other tools, read and written by functions (never methods of Workload or Topology).

* workloads: :mod:`.chakra` (Chakra ET, ASTRA-sim's: ``read_chakra`` / ``write_chakra``),
  :mod:`.aicb` (SimAI / AICB text: ``read_aicb``), :mod:`.workload_files` (``hcsim run
  --workload NAME|FILE``: ``load_workload``), :mod:`.ranks` (the rank map both share);
* topologies: :mod:`.graphml` (``read_graphml`` / ``write_graphml``, igraph's files too),
  :mod:`.astra_network` (ASTRA-sim network YAML), :mod:`.infragraph` (InfraGraph YAML or
  JSON), :mod:`.topology_files` (``hcsim platform import``: ``import_topology``).

Layer: formats sits above platform, collectives and workload, which never import it.
MSCCL-IR, the collectives' plug-in format, stays in :mod:`hcsim.collectives.msccl`.
See docs/formats.md.
"""
