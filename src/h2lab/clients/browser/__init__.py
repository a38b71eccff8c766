"""The browser clients: what every engine shares here, each engine in a folder of its own.

Shared: what a browser client is (:mod:`~h2lab.clients.browser.client`), the kept browsers
(:mod:`~h2lab.clients.browser.pool`), their common options
(:mod:`~h2lab.clients.browser.options`), the request/reply connection under each engine's
control protocol (:mod:`~h2lab.clients.browser.connection`, answers in
:mod:`~h2lab.clients.browser.reply`), what a measured load shares
(:mod:`~h2lab.clients.browser.load`: the URL, the network-idle wait), the requests of a load
(:mod:`~h2lab.clients.browser.log`), its result and artifacts
(:mod:`~h2lab.clients.browser.result`) and the TLS keys (:mod:`~h2lab.clients.browser.keylog`).

Engines: :mod:`~h2lab.clients.browser.chromium` (DevTools over a pipe) and
:mod:`~h2lab.clients.browser.firefox` (WebDriver BiDi over a WebSocket). Each registers its
client from its ``client`` module, named in :data:`h2lab.clients.ADAPTERS`.
"""
