"""Front ends that feed jobs into the platform: serving, cluster scheduling, queue selection.

* :mod:`.serving`: inference serving with dynamic batching (Inoue), and the batch-time
  tables of transformer models computed by the engine;
* :mod:`.cluster`: trace-driven multi-tenant GPU scheduling whose jobs run on the
  platform (AnalySIM);
* :mod:`.queue_selection`: routing batch jobs into queues (Kawanami et al.).

Each runs its own SimGrid simulation and may use every layer below it; the commands are
in :mod:`hcsim.cli`. Guides: docs/serving.md, docs/cluster.md, docs/queue-selection.md.
"""
