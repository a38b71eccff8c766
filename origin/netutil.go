package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"unsafe"

	"github.com/quic-go/quic-go"
	_ "github.com/quic-go/quic-go/qlog" // registers the QUIC qlog event schema
	"github.com/quic-go/quic-go/qlogwriter"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// tcpNotsentLowat is TCP_NOTSENT_LOWAT from linux/tcp.h (the syscall package lacks it).
const tcpNotsentLowat = 25

func setNotsentLowat(c net.Conn, n int) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpNotsentLowat, n)
	})
}

// tcpCongestion is TCP_CONGESTION from linux/tcp.h.
const tcpCongestion = 13

// congestionOf is the congestion control the kernel gave an accepted TCP connection ("" when
// it cannot be read).
func congestionOf(c net.Conn) string {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return ""
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return ""
	}
	var name [16]byte
	size := uint32(len(name))
	_ = raw.Control(func(fd uintptr) {
		_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP,
			tcpCongestion, uintptr(unsafe.Pointer(&name[0])), uintptr(unsafe.Pointer(&size)), 0)
		if errno != 0 {
			size = 0
		}
	})
	return string(bytes.TrimRight(name[:min(int(size), len(name))], "\x00"))
}

// tunedListener applies tune to every accepted connection.
type tunedListener struct {
	net.Listener
	tune func(net.Conn) net.Conn
}

func (l tunedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.tune(c), nil
}

// chanListener hands TLS connections that negotiated http/1.1 to a net/http server.
type chanListener struct {
	addr net.Addr
	ch   chan net.Conn
	once sync.Once
	done chan struct{}
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) put(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

type qlogTrace = qlogwriter.Trace

// qlogTracer writes one qlog file per QUIC connection into dir, <odcid>_server.sqlog (the
// naming of quic-go's qlog.DefaultConnectionTracer, which only reads the folder from $QLOGDIR);
// the ledger flushes the open ones when a trial asks for its totals.
func qlogTracer(dir string, ledger *quicLedger) func(context.Context, bool, quic.ConnectionID) qlogTrace {
	return func(_ context.Context, isClient bool, id quic.ConnectionID) qlogTrace {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil
		}
		label := "server"
		if isClient {
			label = "client"
		}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s_%s.sqlog", id, label)))
		if err != nil {
			return nil
		}
		bf := &bufferedFile{w: bufio.NewWriter(f), f: f, ledger: ledger}
		ledger.opened(bf)
		seq := qlogwriter.NewConnectionFileSeq(bf, isClient, id)
		go seq.Run()
		return seq
	}
}

// bufferedFile is a qlog file written through a buffer, flushed on demand (by another
// goroutine than the writer's: hence the lock) and when closed.
type bufferedFile struct {
	mu     sync.Mutex
	w      *bufio.Writer
	f      *os.File
	ledger *quicLedger
}

func (b *bufferedFile) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

func (b *bufferedFile) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Flush()
}

func (b *bufferedFile) Close() error {
	b.ledger.closed(b)
	if err := b.Flush(); err != nil {
		_ = b.f.Close()
		return err
	}
	return b.f.Close()
}
