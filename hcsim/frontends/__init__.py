"""Front ends that feed jobs into the platform: inference batching (and, next, a cluster scheduler)."""
