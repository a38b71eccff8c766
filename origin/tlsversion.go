package main

import (
	"crypto/tls"
	"fmt"
)

// tlsVersions are the -tls flag's values: the one TLS version the TCP listener (h1s, h2s)
// offers, the trial's tls factor (h2lab.servers.ServeContext.tls_version).
var tlsVersions = map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}

// parseTLSVersion turns "1.2" or "1.3" into crypto/tls's version number.
func parseTLSVersion(s string) (uint16, error) {
	v, ok := tlsVersions[s]
	if !ok {
		return 0, fmt.Errorf("-tls %q: expected 1.2 or 1.3", s)
	}
	return v, nil
}

// tcpTLSConfig is the TLS configuration of the TCP listener: ALPN h2 or http/1.1, and the one
// version (MinVersion = MaxVersion), so a client asking for another fails its handshake.
// TLS 1.2 keeps crypto/tls's default suites: with the local CA's P-256 keys (src/h2lab/tls.py)
// these are ECDHE-ECDSA with AES-GCM or ChaCha20-Poly1305, as Chromium and h2load offer.
// The HTTP/3 listener does not use it: QUIC is TLS 1.3 (RFC 9001).
func tcpTLSConfig(cert tls.Certificate, version uint16) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2", "http/1.1"},
		MinVersion:   version,
		MaxVersion:   version,
	}
}
