package main

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"net"
	"os"
	"sync"

	"github.com/quic-go/quic-go"
)

// quicLedger counts every QUIC connection's packets, open and closed, so that a trial reads
// the packets its server sent and lost as it reads TCP's retransmits from the kernel: a total
// before the load and one after (a connection's own counts end with it).
type quicLedger struct {
	mu           sync.Mutex
	live         map[*quic.Conn]struct{}
	closedSent   uint64
	closedLost   uint64
	connections  uint64
	qlogs        map[*bufferedFile]struct{}
	qlogsWritten uint64
	tcpCC        map[string]uint64 // accepted TCP connections by their congestion control
}

func newQUICLedger() *quicLedger {
	return &quicLedger{live: map[*quic.Conn]struct{}{}, qlogs: map[*bufferedFile]struct{}{},
		tcpCC: map[string]uint64{}}
}

// track is http3.Server's ConnContext: c is counted while it lives, and its last counts are
// kept when it ends.
func (l *quicLedger) track(ctx context.Context, c *quic.Conn) context.Context {
	l.mu.Lock()
	l.live[c] = struct{}{}
	l.connections++
	l.mu.Unlock()
	go func() {
		<-c.Context().Done()
		s := c.ConnectionStats()
		l.mu.Lock()
		delete(l.live, c)
		l.closedSent += s.PacketsSent
		l.closedLost += s.PacketsLost
		l.mu.Unlock()
	}()
	return ctx
}

// quicTotals is what the control socket answers: counts since the server started.
type quicTotals struct {
	Connections uint64 `json:"connections"`
	SentPackets uint64 `json:"sent_packets"`
	LostPackets uint64 `json:"lost_packets"`
	// QlogFiles is how many qlog files were written (each flushed before the answer).
	QlogFiles uint64 `json:"qlog_files"`
	// CC and InitialWindowBytes are what quic-go's last sender was made with ("reno" or
	// "cubic"; "" before the first connection, or in a build without the overlay).
	CC                 string `json:"cc"`
	InitialWindowBytes int64  `json:"initial_window_bytes"`
	// TCPCC counts the TCP connections accepted so far by the congestion control the kernel
	// gave each (read from the socket: TCP_CONGESTION).
	TCPCC map[string]uint64 `json:"tcp_cc"`
}

func (l *quicLedger) totals() quicTotals {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := quicTotals{Connections: l.connections, SentPackets: l.closedSent,
		LostPackets: l.closedLost, QlogFiles: l.qlogsWritten, TCPCC: maps.Clone(l.tcpCC)}
	for c := range l.live {
		s := c.ConnectionStats()
		t.SentPackets += s.PacketsSent
		t.LostPackets += s.PacketsLost
	}
	for f := range l.qlogs {
		_ = f.Flush()
	}
	t.CC, t.InitialWindowBytes = quicCongestionControl()
	return t
}

// accepted counts a TCP connection the kernel gave congestion control cc.
func (l *quicLedger) accepted(cc string) {
	if cc == "" {
		return
	}
	l.mu.Lock()
	l.tcpCC[cc]++
	l.mu.Unlock()
}

func (l *quicLedger) opened(f *bufferedFile) {
	l.mu.Lock()
	l.qlogs[f] = struct{}{}
	l.qlogsWritten++
	l.mu.Unlock()
}

func (l *quicLedger) closed(f *bufferedFile) {
	l.mu.Lock()
	delete(l.qlogs, f)
	l.mu.Unlock()
}

// serveControl answers every connection to the Unix socket at path with one JSON line of
// totals (whatever it sent). The socket lives in the state folder, reached by the lab only.
func (l *quicLedger) serveControl(path string) (net.Listener, error) {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			w := bufio.NewWriter(c)
			_ = json.NewEncoder(w).Encode(l.totals())
			_ = w.Flush()
			_ = c.Close()
		}
	}()
	return ln, nil
}
