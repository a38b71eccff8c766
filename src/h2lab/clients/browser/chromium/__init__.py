"""Chromium, driven over the DevTools protocol on its own pipe: the client
(:mod:`~h2lab.clients.browser.chromium.client`), its options and switches
(:mod:`~h2lab.clients.browser.chromium.options`), the DevTools pipe
(:mod:`~h2lab.clients.browser.chromium.cdp`), a trial's tab
(:mod:`~h2lab.clients.browser.chromium.tab`) and its metrics
(:mod:`~h2lab.clients.browser.chromium.analysis`)."""
