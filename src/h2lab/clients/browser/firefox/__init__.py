"""Firefox, driven over WebDriver BiDi, which it speaks itself: the client
(:mod:`~h2lab.clients.browser.firefox.client`), its options and preferences
(:mod:`~h2lab.clients.browser.firefox.options`), the BiDi connection
(:mod:`~h2lab.clients.browser.firefox.bidi`) over a WebSocket
(:mod:`~h2lab.clients.browser.firefox.websocket`), a trial's tab
(:mod:`~h2lab.clients.browser.firefox.tab`), its events and metrics
(:mod:`~h2lab.clients.browser.firefox.events`) and the compositor's frames
(:mod:`~h2lab.clients.browser.firefox.frames`)."""
