package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// FrameLog records every frame an HTTP/2 write scheduler hands to the connection, in the order
// it does, as tab-separated lines: microseconds since the server started, connection number,
// stream id, frame kind (DATA or the x/net writer type), DATA payload bytes.
type FrameLog struct {
	mu    sync.Mutex
	w     *bufio.Writer
	f     *os.File
	start time.Time
	conns atomic.Uint64
}

func OpenFrameLog(path string, start time.Time) (*FrameLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	l := &FrameLog{w: bufio.NewWriter(f), f: f, start: start}
	fmt.Fprintln(l.w, "t_us\tconn\tstream\tframe\tbytes")
	return l, nil
}

func (l *FrameLog) record(conn uint64, stream uint32, kind string, size int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%d\t%d\t%d\t%s\t%d\n", time.Since(l.start).Microseconds(), conn, stream, kind, size)
}

// Close flushes the log.
func (l *FrameLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.w.Flush(); err != nil {
		return err
	}
	return l.f.Close()
}

// Wrap returns a scheduler factory whose schedulers log what they pop.
func (l *FrameLog) Wrap(inner schedulerFactory) schedulerFactory {
	return func(sig *Signals) http2.WriteScheduler {
		return &loggingScheduler{WriteScheduler: inner(sig), log: l, conn: l.conns.Add(1)}
	}
}

type loggingScheduler struct {
	http2.WriteScheduler
	log  *FrameLog
	conn uint64
}

func (s *loggingScheduler) Pop() (http2.FrameWriteRequest, bool) {
	wr, ok := s.WriteScheduler.Pop()
	if ok {
		s.log.record(s.conn, wr.StreamID(), frameKind(wr), wr.DataSize())
	}
	return wr, ok
}

// frameKind names a frame write request from its debug string ("writer=*http2.writeData"...).
func frameKind(wr http2.FrameWriteRequest) string {
	if wr.DataSize() > 0 {
		return "DATA"
	}
	s := wr.String()
	i := strings.Index(s, "writer=")
	if i < 0 {
		return "?"
	}
	kind := strings.TrimSuffix(s[i+len("writer="):], "]")
	kind = strings.TrimPrefix(strings.TrimPrefix(kind, "*"), "http2.")
	if strings.HasPrefix(kind, "writeData") {
		return "DATA"
	}
	if j := strings.IndexAny(kind, " {"); j > 0 {
		kind = kind[:j]
	}
	return kind
}
