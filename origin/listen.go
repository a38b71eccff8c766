package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"
)

// server is everything one run listens with, so that shutdown can close it.
type server struct {
	closers    []io.Closer
	errs       chan error
	cfg        *Config
	tlsVersion uint16
	handler    http.Handler
	h2         h2Conns
	tracer     func(context.Context, bool, quic.ConnectionID) qlogTrace
	ledger     *quicLedger
	errorLog   *log.Logger
}

func (s *server) fail(err error) {
	select {
	case s.errs <- err:
	default:
	}
}

func (s *server) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		_ = s.closers[i].Close()
	}
}

// h2Conns serves HTTP/2 connections, each with its own write scheduler and, for a scheduler
// that follows RFC 9218, its own priority signals read from what the client sends.
type h2Conns struct {
	srv   *http2.Server
	sched schedulerFactory
	sniff bool
}

func (h *h2Conns) serve(c net.Conn, opts *http2.ServeConnOpts) {
	sig := &Signals{}
	if h.sniff {
		c = sniffed(c, sig)
	}
	srv := *h.srv
	srv.NewWriteScheduler = func() http2.WriteScheduler { return h.sched(sig) }
	srv.ServeConn(c, opts)
}

// listen starts o's listeners, one per configured port.
func (s *server) listen(o OriginConfig) error {
	cert, err := tls.LoadX509KeyPair(o.Cert, o.Key)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Host, err)
	}
	addr := func(port int) string { return net.JoinHostPort(o.IP, strconv.Itoa(port)) }
	h1 := &http.Server{Handler: s.handler, ErrorLog: s.errorLog, IdleTimeout: s.cfg.idleTimeout(),
		ReadHeaderTimeout: s.clientTimeout()}
	s.closers = append(s.closers, h1)
	opts := &http2.ServeConnOpts{Handler: s.handler, BaseConfig: h1}
	ports := s.cfg.Ports
	if ports.H1c > 0 {
		ln, err := net.Listen("tcp", addr(ports.H1c))
		if err != nil {
			return err
		}
		go func() { s.fail(ignoreClosed(h1.Serve(tunedListener{ln, s.tune}))) }()
	}
	if ports.TLS > 0 {
		if err := s.listenTLS(addr(ports.TLS), cert, h1, opts); err != nil {
			return err
		}
	}
	if ports.H2c > 0 {
		ln, err := net.Listen("tcp", addr(ports.H2c))
		if err != nil {
			return err
		}
		s.closers = append(s.closers, ln)
		s.accept(ln, func(c net.Conn) { s.h2.serve(s.tune(c), opts) })
	}
	if ports.H3 > 0 {
		return s.listenH3(addr(ports.H3), cert)
	}
	return nil
}

// clientTimeout is cfg.ClientTimeoutS, or 30 s when it is not set.
func (s *server) clientTimeout() time.Duration {
	if s.cfg.ClientTimeoutS > 0 {
		return time.Duration(s.cfg.ClientTimeoutS * float64(time.Second))
	}
	return 30 * time.Second
}

func (s *server) tune(c net.Conn) net.Conn {
	s.ledger.accepted(congestionOf(c))
	if s.cfg.NotsentLowatBytes > 0 {
		setNotsentLowat(c, s.cfg.NotsentLowatBytes)
	}
	return c
}

// accept hands every connection ln accepts to serve, in its own goroutine.
func (s *server) accept(ln net.Listener, serve func(net.Conn)) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				s.fail(ignoreClosed(err))
				return
			}
			go serve(c)
		}
	}()
}

// listenTLS serves h2 and h1 over TLS on one port, chosen by ALPN.
func (s *server) listenTLS(addr string, cert tls.Certificate, h1 *http.Server,
	opts *http2.ServeConnOpts) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.closers = append(s.closers, ln)
	h1s := newChanListener(ln.Addr())
	go func() { s.fail(ignoreClosed(h1.Serve(h1s))) }()
	tlsConf := tcpTLSConfig(cert, s.tlsVersion)
	s.accept(ln, func(c net.Conn) {
		tc := tls.Server(s.tune(c), tlsConf)
		_ = tc.SetDeadline(time.Now().Add(s.clientTimeout()))
		if err := tc.Handshake(); err != nil {
			_ = c.Close()
			return
		}
		_ = tc.SetDeadline(time.Time{})
		if tc.ConnectionState().NegotiatedProtocol == "h2" {
			s.h2.serve(tc, opts)
			return
		}
		h1s.put(tc)
	})
	return nil
}

// listenH3 serves HTTP/3 (quic-go schedules by the client's RFC 9218 signals itself; the
// handler overrides them for the fcfs and rr schedulers: h3Priority).
func (s *server) listenH3(addr string, cert tls.Certificate) error {
	qconf := &quic.Config{MaxIncomingStreams: 1000, Allow0RTT: s.cfg.EarlyData}
	if s.tracer != nil {
		qconf.Tracer = s.tracer
	}
	h3 := &http3.Server{
		Addr:        addr,
		Handler:     s.handler,
		TLSConfig:   http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}),
		QUICConfig:  qconf,
		ConnContext: s.ledger.track,
	}
	udp, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	s.closers = append(s.closers, h3, udp)
	go func() { s.fail(ignoreClosed(h3.Serve(udp))) }()
	return nil
}

func ignoreClosed(err error) error {
	if err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed) ||
		errors.Is(err, quic.ErrServerClosed) {
		return nil
	}
	return err
}
