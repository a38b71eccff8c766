"""The reprioritization study (docs/servers.md, "Reprioritization"): does a server send a
late-discovered high-priority response ahead of large low-priority ones already in flight?

A study, not an adapter: it starts a lab (:mod:`h2lab.net`), a page (:mod:`h2lab.pages`) and a
server (:mod:`h2lab.servers`), drives them with its own scripted HTTP/2 client
(:mod:`h2lab.reprio.client`), and draws what it saw (:mod:`h2lab.report.svg`); the test
itself is :mod:`h2lab.reprio.study`.
"""
