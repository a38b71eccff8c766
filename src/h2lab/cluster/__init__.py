"""Running a matrix on a Ray cluster: one lab per node, the driver alone writes the store.

- :mod:`h2lab.cluster.secrets`: the cluster's token and CA, and the environment that turns on
  Ray's token authentication and mutual TLS for every process (nodes and driver).
- :mod:`h2lab.cluster.nodes`: ``h2lab cluster head|worker``: a Ray node started by h2lab
  (a lab node only after its ``h2lab doctor`` passes), and finding the lab nodes.
- :mod:`h2lab.cluster.supervise`: the watcher of a node's ``ray start``: a node whose Ray
  processes die exits 1 saying why; SIGTERM stops all of it.
- :mod:`h2lab.cluster.transfer`: pages by content digest, artifacts as bounded archives.
- :mod:`h2lab.cluster.checks`: a worker checks every trial with the experiment's parsers.
- :mod:`h2lab.cluster.node`: the actor that holds a node's lab and runs blocks in it.
- :mod:`h2lab.cluster.executor`: :class:`~h2lab.cluster.executor.RayExecutor`, the driver's
  side (the executor interface of :mod:`h2lab.runner.executor`).

docs/cluster.md is the user's guide and the trust model.
"""
