"""Inference serving: dynamic batching (Inoue) and the batch-time tables of transformer models.

* :mod:`.batching`: jobs arriving into per-server buffers, served in batches on XPUs of
  a compiled platform, by a batch-time function (linear, a measured table, or the
  engine's);
* :mod:`.batch_times`: the batch-time table tau[b] of a transformer served on a
  platform, each entry simulated by the engine.

Guides: docs/serving.md; docs/models.md, "Serving a model on a platform".
"""
