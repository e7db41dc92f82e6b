"""Inference serving: dynamic batching (Inoue) and the batch-time tables of transformer models."""
