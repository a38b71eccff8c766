package main

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// The control socket answers one JSON line of totals, the qlog files it knows flushed first.
func TestControlSocketAnswersTotalsAndFlushes(t *testing.T) {
	dir := t.TempDir()
	l := newQUICLedger()
	l.closedSent, l.closedLost, l.connections = 700, 14, 2
	l.accepted("bbr")
	l.accepted("bbr")
	l.accepted("")
	f, err := os.Create(filepath.Join(dir, "a_server.sqlog"))
	if err != nil {
		t.Fatal(err)
	}
	bf := &bufferedFile{w: bufio.NewWriter(f), f: f, ledger: l}
	l.opened(bf)
	if _, err := bf.Write([]byte("\x1e{}\n")); err != nil {
		t.Fatal(err)
	}
	ln, err := l.serveControl(filepath.Join(dir, "control.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("unix", filepath.Join(dir, "control.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got quicTotals
	if err := json.NewDecoder(c).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.TCPCC) != 1 || got.TCPCC["bbr"] != 2 {
		t.Errorf("tcp_cc %v, want bbr: 2", got.TCPCC)
	}
	if got.Connections != 2 || got.SentPackets != 700 || got.LostPackets != 14 ||
		got.QlogFiles != 1 {
		t.Errorf("totals %+v, want 2 connections, 700 sent, 14 lost, 1 qlog file", got)
	}
	if data, _ := os.ReadFile(f.Name()); string(data) != "\x1e{}\n" {
		t.Errorf("qlog file not flushed: %q", data)
	}
	if err := bf.Close(); err != nil || len(l.qlogs) != 0 {
		t.Errorf("closed file still known (%v)", err)
	}
}
