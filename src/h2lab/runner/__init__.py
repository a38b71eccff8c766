"""Matrix expansion, ordering and seeds (pure), the driver of a run, and the executors that
decide where its blocks run (in this process, or as local worker processes)."""
