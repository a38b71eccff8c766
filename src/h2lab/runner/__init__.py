"""Matrix expansion, ordering and seeds (pure), and the lifecycle of a run."""
