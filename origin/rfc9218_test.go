package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

func TestParsePriorityReadsUrgencyAndIncremental(t *testing.T) {
	cases := map[string]Urgency{
		"":              DefaultUrgency,
		"u=0":           {U: 0},
		"u=5, i":        {U: 5, Incremental: true},
		"i, u=1":        {U: 1, Incremental: true},
		"u=2, i=?0":     {U: 2},
		"u=4;x=1, i=?1": {U: 4, Incremental: true},
		"u=9":           DefaultUrgency, // out of range: ignored (RFC 9218 §4.1)
		"u=a, foo=bar":  DefaultUrgency,
		"u=12":          DefaultUrgency,
	}
	for in, want := range cases {
		if got := ParsePriority(in, DefaultUrgency); got != want {
			t.Errorf("%q: got %+v, want %+v", in, got, want)
		}
	}
}

func TestSignalsDefaultToRoundRobinUntilTheClientSignals(t *testing.T) {
	s := &Signals{}
	if got := s.Of(1); got != (Urgency{U: 3, Incremental: true}) {
		t.Fatalf("before any signal: %+v", got)
	}
	s.Header(1, "u=1", true)
	s.Header(3, "", false)
	if s.Of(1) != (Urgency{U: 1}) || s.Of(3) != DefaultUrgency {
		t.Fatalf("after a signal: %+v %+v", s.Of(1), s.Of(3))
	}
	g := s.Gen()
	s.Update(3, "u=0, i")
	if s.Of(3) != (Urgency{U: 0, Incremental: true}) || s.Gen() == g {
		t.Fatalf("update: %+v gen %d", s.Of(3), s.Gen())
	}
}

// openWith opens ids with the given priority fields and queues a body of size bytes on each.
func openWith(s *RFC9218[fakeFrame], sig *Signals, size int, prio map[uint32]string) map[uint32]int {
	remaining := map[uint32]int{}
	for _, id := range []uint32{1, 3, 5, 7} {
		v, ok := prio[id]
		sig.Header(id, v, ok)
		s.OpenStream(id, http2.OpenStreamOptions{})
		s.Push(fakeFrame{stream: id, kind: "DATA", size: size})
		remaining[id] = size
	}
	return remaining
}

func TestRFC9218SendsTheMostUrgentFirstAndInterleavesOnlyIncremental(t *testing.T) {
	sig := &Signals{}
	s := NewRFC9218[fakeFrame](sig, nil)
	remaining := openWith(s, sig, 20000, map[uint32]string{1: "u=5, i", 3: "u=5, i", 5: "u=1", 7: "u=0"})
	got := strings.Join(drain(s, remaining), " ")
	want := "7:DATA:16384 7:DATA:3616 5:DATA:16384 5:DATA:3616 " +
		"1:DATA:16384 3:DATA:16384 1:DATA:3616 3:DATA:3616"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestRFC9218FollowsAPriorityUpdateAtTheNextFrame(t *testing.T) {
	sig := &Signals{}
	s := NewRFC9218[fakeFrame](sig, nil)
	remaining := openWith(s, sig, 20000, map[uint32]string{1: "u=3", 3: "u=3", 5: "u=3", 7: "u=6"})
	first, _ := s.Pop()
	sig.Update(7, "u=0")
	rest := drain(s, remaining)
	if first.stream != 1 || rest[0] != "7:DATA:16384" {
		t.Fatalf("first %d, then %v: stream 7 should go next once updated", first.stream, rest)
	}
}

func TestRFC9218SendsControlFramesFirstAndSkipsStreamsWithNothingReady(t *testing.T) {
	sig := &Signals{}
	s := NewRFC9218[fakeFrame](sig, nil)
	sig.Header(1, "u=0", true)
	sig.Header(3, "u=6", true)
	s.OpenStream(1, http2.OpenStreamOptions{})
	s.OpenStream(3, http2.OpenStreamOptions{})
	s.Push(fakeFrame{stream: 3, kind: "DATA", size: 10})
	s.Push(fakeFrame{stream: 0, kind: "PING"})
	a, _ := s.Pop()
	b, _ := s.Pop()
	if a.kind != "PING" || b.stream != 3 {
		t.Fatalf("got %+v then %+v", a, b)
	}
}

// clientBytes is what an HTTP/2 client sends: the preface, SETTINGS, then requests with the
// given priority fields (empty: none), then PRIORITY_UPDATEs, the second request's header
// block split across HEADERS and CONTINUATION.
func clientBytes(t *testing.T, prio []string, updates map[uint32]string) []byte {
	var buf bytes.Buffer
	buf.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&buf, nil)
	_ = fr.WriteSettings()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i, p := range prio {
		hb.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":path", "/x"}, {"priority", p}} {
			if f[0] == "priority" && p == "" {
				continue
			}
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		id := uint32(2*i + 1)
		_ = fr.WriteData(99, false, []byte("body bytes the sniffer passes over"))
		block := hb.Bytes()
		if i == 1 {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block[:2],
				EndStream: true, Priority: http2.PriorityParam{Weight: 200}})
			_ = fr.WriteContinuation(id, true, block[2:])
			continue
		}
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block,
			EndStream: true, EndHeaders: true, PadLength: 3})
	}
	for id, v := range updates {
		_ = fr.WritePriorityUpdate(id, v)
	}
	return buf.Bytes()
}

func TestH2SnifferReadsPriorityFieldsAndUpdatesInAnyChunking(t *testing.T) {
	raw := clientBytes(t, []string{"u=5, i", "u=0", ""}, map[uint32]string{5: "u=2"})
	for _, chunk := range []int{1, 7, 100, len(raw)} {
		sig := &Signals{}
		sn := NewH2Sniffer(sig)
		for b := raw; len(b) > 0; {
			n := min(chunk, len(b))
			sn.Feed(b[:n])
			b = b[n:]
		}
		if sn.Broken {
			t.Fatalf("chunk %d: broken", chunk)
		}
		got := []Urgency{sig.Of(1), sig.Of(3), sig.Of(5)}
		want := []Urgency{{U: 5, Incremental: true}, {U: 0}, {U: 2}}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("chunk %d: stream %d got %+v, want %+v", chunk, 2*i+1, got[i], want[i])
			}
		}
	}
}

func TestH2SnifferStopsOnAnOversizedOrGarbledFrame(t *testing.T) {
	for name, tail := range map[string][]byte{
		"oversized headers": {0x01, 0x00, 0x01, h2FrameHeaders, h2FlagEndHeaders, 0, 0, 0, 1},
		"short update":      {0x00, 0x00, 0x02, h2FramePriorityUpd, 0, 0, 0, 0, 0, 1, 2},
		"bad hpack":         {0x00, 0x00, 0x02, h2FrameHeaders, h2FlagEndHeaders, 0, 0, 0, 1, 0xff, 0xff},
	} {
		sig := &Signals{}
		sn := NewH2Sniffer(sig)
		sn.Feed([]byte(http2.ClientPreface))
		sn.Feed(tail)
		if !sn.Broken {
			t.Errorf("%s: not broken", name)
		}
	}
}

func TestSetH3PriorityReachesTheStream(t *testing.T) {
	cert := testCert(t)
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	set := make(chan bool, 1)
	srv := &http3.Server{
		TLSConfig: http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert}}),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			set <- setH3Priority(w, Urgency{U: 3})
			_, _ = io.WriteString(w, "ok")
		}),
	}
	go func() { _ = srv.Serve(udp) }()
	defer srv.Close()
	tr := &http3.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		QUICConfig: &quic.Config{}}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+udp.LocalAddr().String()+"/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !<-set || string(body) != "ok" {
		t.Fatalf("priority not set, or body %q", body)
	}
	if setH3Priority(httptestRecorder{}, Urgency{}) {
		t.Fatal("set a priority on a writer that is not HTTP/3's")
	}
}

type httptestRecorder struct{ http.ResponseWriter }
