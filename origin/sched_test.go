package main

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/http2"
)

// maxFrame is the default SETTINGS_MAX_FRAME_SIZE (RFC 9113 §6.5.2).
const maxFrame = 16384

// fakeFrame is a queued write: control frames on stream 0, HEADERS (size 0) or DATA.
type fakeFrame struct {
	stream uint32
	kind   string
	size   int
	window *int // stream flow-control window; nil: unlimited
}

func (f fakeFrame) StreamID() uint32 { return f.stream }
func (f fakeFrame) DataSize() int {
	if f.kind == "DATA" {
		return f.size
	}
	return 0
}

func (f fakeFrame) Consume(n int32) (fakeFrame, fakeFrame, int) {
	if f.kind != "DATA" || f.size == 0 {
		return f, fakeFrame{}, 1
	}
	allowed := min(int(n), maxFrame)
	if f.window != nil {
		allowed = min(allowed, *f.window)
	}
	if allowed <= 0 {
		return fakeFrame{}, fakeFrame{}, 0
	}
	take := min(allowed, f.size)
	if f.window != nil {
		*f.window -= take
	}
	if take == f.size {
		return f, fakeFrame{}, 1
	}
	head, rest := f, f
	head.size, rest.size = take, f.size-take
	return head, rest, 2
}

type sched interface {
	OpenStream(uint32, http2.OpenStreamOptions)
	CloseStream(uint32)
	Push(fakeFrame)
	Pop() (fakeFrame, bool)
}

// drain pops every frame, closing a stream after its last DATA (as the server does after
// END_STREAM), and returns "stream:kind:size" in pop order.
func drain(s sched, remaining map[uint32]int) []string {
	var out []string
	for {
		f, ok := s.Pop()
		if !ok {
			return out
		}
		out = append(out, fmt.Sprintf("%d:%s:%d", f.stream, f.kind, f.size))
		if f.kind == "DATA" {
			remaining[f.stream] -= f.size
			if remaining[f.stream] == 0 {
				s.CloseStream(f.stream)
			}
		}
	}
}

// load opens streams 1, 3, 5 and queues HEADERS + a body of size bytes on each.
func load(s sched, size int) map[uint32]int {
	remaining := map[uint32]int{}
	for _, id := range []uint32{1, 3, 5} {
		s.OpenStream(id, http2.OpenStreamOptions{})
		s.Push(fakeFrame{stream: id, kind: "HEADERS"})
		s.Push(fakeFrame{stream: id, kind: "DATA", size: size})
		remaining[id] = size
	}
	return remaining
}

func TestFCFSSendsOneResponseCompletelyBeforeTheNext(t *testing.T) {
	s := &FCFS[fakeFrame]{}
	remaining := load(s, 40000)
	s.Push(fakeFrame{stream: 0, kind: "PING"})
	got := strings.Join(drain(s, remaining), " ")
	want := "0:PING:0 1:HEADERS:0 1:DATA:16384 1:DATA:16384 1:DATA:7232 " +
		"3:HEADERS:0 3:DATA:16384 3:DATA:16384 3:DATA:7232 " +
		"5:HEADERS:0 5:DATA:16384 5:DATA:16384 5:DATA:7232"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestFCFSWaitsForTheHeadStreamEvenWhenOthersAreReady(t *testing.T) {
	s := &FCFS[fakeFrame]{}
	s.OpenStream(1, http2.OpenStreamOptions{})
	s.OpenStream(3, http2.OpenStreamOptions{})
	s.Push(fakeFrame{stream: 3, kind: "DATA", size: 10})
	if f, ok := s.Pop(); ok {
		t.Fatalf("popped %+v while stream 1 (first) had nothing queued", f)
	}
	s.Push(fakeFrame{stream: 1, kind: "DATA", size: 5})
	if f, ok := s.Pop(); !ok || f.stream != 1 {
		t.Fatalf("got %+v, %v; want stream 1", f, ok)
	}
	s.CloseStream(1)
	if f, ok := s.Pop(); !ok || f.stream != 3 {
		t.Fatalf("got %+v, %v; want stream 3 after 1 closed", f, ok)
	}
}

func TestFCFSWaitsOnFlowControlOfTheHeadStream(t *testing.T) {
	s := &FCFS[fakeFrame]{}
	window := 0
	s.OpenStream(1, http2.OpenStreamOptions{})
	s.OpenStream(3, http2.OpenStreamOptions{})
	s.Push(fakeFrame{stream: 1, kind: "DATA", size: 10, window: &window})
	s.Push(fakeFrame{stream: 3, kind: "DATA", size: 10})
	if f, ok := s.Pop(); ok {
		t.Fatalf("popped %+v while stream 1 was blocked by flow control", f)
	}
	window = 10
	if f, ok := s.Pop(); !ok || f.stream != 1 || f.size != 10 {
		t.Fatalf("got %+v, %v; want stream 1's 10 bytes", f, ok)
	}
}

func TestRoundRobinTakesOneFrameOfEachReadyStreamInTurn(t *testing.T) {
	s := &RoundRobin[fakeFrame]{}
	remaining := load(s, 40000)
	got := strings.Join(drain(s, remaining), " ")
	want := "1:HEADERS:0 3:HEADERS:0 5:HEADERS:0 " +
		"1:DATA:16384 3:DATA:16384 5:DATA:16384 " +
		"1:DATA:16384 3:DATA:16384 5:DATA:16384 " +
		"1:DATA:7232 3:DATA:7232 5:DATA:7232"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestRoundRobinSkipsStreamsWithNothingReadyAndKeepsItsTurnOnClose(t *testing.T) {
	s := &RoundRobin[fakeFrame]{}
	for _, id := range []uint32{1, 3, 5, 7} {
		s.OpenStream(id, http2.OpenStreamOptions{})
	}
	s.Push(fakeFrame{stream: 1, kind: "DATA", size: 1})
	s.Push(fakeFrame{stream: 5, kind: "DATA", size: 1})
	s.Push(fakeFrame{stream: 7, kind: "DATA", size: 1})
	var got []uint32
	f, _ := s.Pop() // 1
	got = append(got, f.stream)
	s.CloseStream(1) // the turn moves to 3, now index 0
	for {
		f, ok := s.Pop()
		if !ok {
			break
		}
		got = append(got, f.stream)
	}
	if fmt.Sprint(got) != "[1 5 7]" {
		t.Fatalf("got %v, want [1 5 7]", got)
	}
}

func TestControlFramesAndFramesOfUnknownStreamsGoFirst(t *testing.T) {
	for name, s := range map[string]sched{"fcfs": &FCFS[fakeFrame]{}, "rr": &RoundRobin[fakeFrame]{}} {
		s.OpenStream(1, http2.OpenStreamOptions{})
		s.Push(fakeFrame{stream: 1, kind: "DATA", size: 3})
		s.Push(fakeFrame{stream: 9, kind: "RST_STREAM"}) // stream 9 was never opened
		if f, _ := s.Pop(); f.stream != 9 {
			t.Errorf("%s: got %+v first, want the RST_STREAM of stream 9", name, f)
		}
	}
}

func TestNewSchedulerKnowsTheFourNames(t *testing.T) {
	for _, name := range []string{"client", "rr", "fcfs", "rfc9218"} {
		if f, ok := newScheduler(name); !ok || f(&Signals{}) == nil {
			t.Errorf("%s: no scheduler", name)
		}
	}
	if _, ok := newScheduler("random"); ok {
		t.Error("random: accepted")
	}
}
