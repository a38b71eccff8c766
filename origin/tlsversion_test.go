package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"
)

// testCert is a self-signed certificate with a P-256 key, as src/h2lab/tls.py makes them.
func testCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "o.test"},
		DNSNames:     []string{"o.test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// handshake runs one TLS handshake over a pipe between a server with conf and a client that
// offers only the version want (and suites, when given); the client's connection state.
func handshake(t *testing.T, conf *tls.Config, want uint16,
	suites []uint16) (tls.ConnectionState, error) {
	t.Helper()
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	done := make(chan error, 1)
	go func() {
		srv := tls.Server(s, conf)
		err := srv.Handshake()
		_ = s.Close() // a failed server ends the client's wait
		done <- err
	}()
	client := tls.Client(c, &tls.Config{
		InsecureSkipVerify: true, MinVersion: want, MaxVersion: want, CipherSuites: suites,
		NextProtos: []string{"h2"}, ServerName: "o.test",
	})
	_ = client.SetDeadline(time.Now().Add(10 * time.Second))
	err := client.Handshake()
	<-done
	return client.ConnectionState(), err
}

// The TCP listener offers exactly the version of -tls: a client offering only that one gets it
// (with h2 by ALPN), a client offering only the other fails its handshake.
func TestTCPListenerOffersOneTLSVersion(t *testing.T) {
	cert := testCert(t)
	for flag, other := range map[string]uint16{"1.2": tls.VersionTLS13, "1.3": tls.VersionTLS12} {
		v, err := parseTLSVersion(flag)
		if err != nil {
			t.Fatal(err)
		}
		conf := tcpTLSConfig(cert, v)
		state, err := handshake(t, conf, v, nil)
		if err != nil {
			t.Fatalf("-tls %s: a %s client failed: %v", flag, tls.VersionName(v), err)
		}
		if state.Version != v || state.NegotiatedProtocol != "h2" {
			t.Errorf("-tls %s: got %s with ALPN %q", flag, tls.VersionName(state.Version),
				state.NegotiatedProtocol)
		}
		if _, err := handshake(t, conf, other, nil); err == nil {
			t.Errorf("-tls %s: a %s-only client completed its handshake", flag, tls.VersionName(other))
		}
	}
}

// With -tls 1.2 the suite Chromium and h2load offer first for an ECDSA key is taken.
func TestTLS12NegotiatesTheBrowsersFirstSuite(t *testing.T) {
	suite := tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
	state, err := handshake(t, tcpTLSConfig(testCert(t), tls.VersionTLS12), tls.VersionTLS12,
		[]uint16{suite})
	if err != nil {
		t.Fatal(err)
	}
	if state.CipherSuite != suite {
		t.Errorf("suite %s", tls.CipherSuiteName(state.CipherSuite))
	}
}

func TestParseTLSVersionRejectsOthers(t *testing.T) {
	for _, s := range []string{"1.1", "1.0", "tls1.3", "", "1.4"} {
		if _, err := parseTLSVersion(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
