package main

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/http2"
)

func prio() *Priority[fakeFrame] {
	return &Priority[fakeFrame]{reset: func(f fakeFrame) bool { return f.kind == "RST_STREAM" }}
}

// open opens id with HEADERS and a body of size bytes queued, depending on dep.
func open(s *Priority[fakeFrame], id, dep uint32, weight uint8, exclusive bool, size int) {
	s.OpenStream(id, http2.OpenStreamOptions{})
	s.AdjustStream(id, http2.PriorityParam{StreamDep: dep, Weight: weight, Exclusive: exclusive})
	s.Push(fakeFrame{stream: id, kind: "HEADERS"})
	s.Push(fakeFrame{stream: id, kind: "DATA", size: size})
}

// streamsInOrder is the pop order as stream ids, runs of the same stream collapsed.
func streamsInOrder(frames []string) string {
	var ids []string
	for _, f := range frames {
		id := f[:strings.Index(f, ":")]
		if len(ids) == 0 || ids[len(ids)-1] != id {
			ids = append(ids, id)
		}
	}
	return strings.Join(ids, " ")
}

func TestPriorityServesAnExclusiveChainOneStreamAfterTheOther(t *testing.T) {
	// Chromium's way: each request depends exclusively on the previous one of its priority
	s := prio()
	remaining := map[uint32]int{1: 40000, 3: 40000, 5: 40000}
	open(s, 1, 0, 255, true, 40000)
	open(s, 3, 1, 219, true, 40000)
	open(s, 5, 3, 183, true, 40000)
	if got := streamsInOrder(drain(s, remaining)); got != "1 3 5" {
		t.Fatalf("got %s, want 1 3 5", got)
	}
}

func TestPrioritySiblingsShareByWeight(t *testing.T) {
	s := prio()
	remaining := map[uint32]int{1: 10 * maxFrame, 3: 10 * maxFrame}
	open(s, 1, 0, 191, false, 10*maxFrame) // weight 192
	open(s, 3, 0, 63, false, 10*maxFrame)  // weight 64
	frames := drain(s, remaining)
	// of the first 8 DATA frames, 6 go to the stream of weight 192 and 2 to weight 64
	count := map[string]int{}
	data := 0
	for _, f := range frames {
		if strings.Contains(f, ":DATA:") && data < 8 {
			count[f[:1]]++
			data++
		}
	}
	if count["1"] != 6 || count["3"] != 2 {
		t.Fatalf("first 8 DATA frames: %v, want 6 of stream 1 and 2 of stream 3\n%v", count, frames)
	}
}

func TestPriorityDropsTheFramesOfAStreamClosedWithFramesQueued(t *testing.T) {
	// the x/net v0.62 scheduler pops zeroed frames here (its origin crash): a stream reset
	// with DATA queued, kept in the tree as closed, while another stream reuses queues
	s := prio()
	open(s, 1, 0, 255, false, 5*maxFrame)
	open(s, 3, 0, 255, false, 5*maxFrame)
	if f, _ := s.Pop(); f.stream == 0 {
		t.Fatalf("popped %+v", f)
	}
	s.CloseStream(1) // the client reset it
	open(s, 5, 1, 255, true, 2*maxFrame)
	remaining := map[uint32]int{3: 5 * maxFrame, 5: 2 * maxFrame}
	frames := drain(s, remaining)
	for _, f := range frames {
		if strings.HasPrefix(f, "0:") || strings.HasPrefix(f, "1:") {
			t.Fatalf("popped %s after stream 1 closed: %v", f, frames)
		}
	}
	if remaining[3] != 0 || remaining[5] != 0 {
		t.Fatalf("bytes not sent: %v (%v)", remaining, frames)
	}
}

func TestPriorityKeepsAClosedStreamsPlaceForTheStreamsThatDependOnIt(t *testing.T) {
	s := prio()
	open(s, 1, 0, 255, true, 100)
	open(s, 3, 1, 219, true, 100) // 3 waits for 1
	open(s, 7, 0, 0, false, 100)  // a sibling of 1 with the lowest weight
	f, _ := s.Pop()
	if f.stream != 1 {
		t.Fatalf("first frame %+v, want stream 1's", f)
	}
	s.Pop() // 1's DATA
	s.CloseStream(1)
	// 5 depends on 1, closed but kept: it goes in 1's chain, ahead of 3, and not to the
	// root beside 7 with the default weight
	open(s, 5, 1, 255, true, 100)
	got := streamsInOrder(drain(s, map[uint32]int{3: 100, 5: 100, 7: 100}))
	if got != "5 3 7" {
		t.Fatalf("got %s, want 5 3 7", got)
	}
}

func TestPriorityKeepsTenClosedStreams(t *testing.T) {
	s := prio()
	for id := uint32(1); id <= 25; id += 2 { // 13 streams
		s.OpenStream(id, http2.OpenStreamOptions{})
		s.CloseStream(id)
	}
	if len(s.nodes) != 1+keepClosed || s.node(1) != nil || s.node(25) == nil {
		t.Fatalf("%d nodes besides the root kept (want %d, the newest)", len(s.nodes)-1, keepClosed)
	}
}

func TestPriorityResetAndFramesOfUnknownStreamsGoFirst(t *testing.T) {
	s := prio()
	open(s, 1, 0, 255, false, 100)
	s.Push(fakeFrame{stream: 1, kind: "RST_STREAM"})
	s.Push(fakeFrame{stream: 9, kind: "WINDOW_UPDATE"})
	got := fmt.Sprint(drain(s, map[uint32]int{1: 100}))
	if got != "[1:RST_STREAM:0 9:WINDOW_UPDATE:0 1:HEADERS:0 1:DATA:100]" {
		t.Fatalf("got %s", got)
	}
}

func TestPriorityReprioritizesUnderItsOwnDependant(t *testing.T) {
	// §5.3.3: 1 <- 3; making 1 depend on 3 moves 3 up to 1's former parent (the root)
	s := prio()
	open(s, 1, 0, 15, false, 10)
	open(s, 3, 1, 15, false, 10)
	s.AdjustStream(1, http2.PriorityParam{StreamDep: 3, Weight: 15})
	if s.node(3).parent != &s.root || s.node(1).parent != s.node(3) {
		t.Fatalf("3's parent %v, 1's parent %v", s.node(3).parent.id, s.node(1).parent.id)
	}
	if got := streamsInOrder(drain(s, map[uint32]int{1: 10, 3: 10})); got != "3 1" {
		t.Fatalf("got %s, want 3 1", got)
	}
}

func TestStreamErrorIsWhatResetRequestsCarry(t *testing.T) {
	// isStreamReset reads the writer's type from FrameWriteRequest.String ("%T")
	if got := fmt.Sprintf("%T", http2.StreamError{}); got != "http2.StreamError" {
		t.Fatalf("StreamError prints as %s", got)
	}
	if isStreamReset(http2.FrameWriteRequest{}) {
		t.Fatal("an empty request taken for a reset")
	}
}

func TestPriorityMovesAStreamExclusivelyOverItsOwnAncestor(t *testing.T) {
	// Chromium, measured: 3 <- 5 <- 7 <- 9 (each exclusive), then a PRIORITY frame makes 9
	// depend exclusively on the root, whose child 3 is 9's ancestor. The tree stays a tree
	// (the first version looped forever here) and 9 goes first.
	s := prio()
	open(s, 3, 0, 182, true, 100)
	open(s, 5, 3, 182, true, 100)
	open(s, 7, 5, 182, true, 100)
	open(s, 9, 7, 182, true, 100)
	s.AdjustStream(9, http2.PriorityParam{StreamDep: 0, Exclusive: true, Weight: 219})
	if s.node(9).parent != &s.root || len(s.root.kids) != 1 || s.node(3).parent != s.node(9) {
		t.Fatalf("9's parent %d, root kids %d, 3's parent %d",
			s.node(9).parent.id, len(s.root.kids), s.node(3).parent.id)
	}
	if len(s.node(7).kids) != 0 {
		t.Fatalf("7 still has %d kids", len(s.node(7).kids))
	}
	got := streamsInOrder(drain(s, map[uint32]int{3: 100, 5: 100, 7: 100, 9: 100}))
	if got != "9 3 5 7" {
		t.Fatalf("got %s, want 9 3 5 7", got)
	}
}
