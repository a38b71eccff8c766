package main

import (
	"math"
	"strings"

	"golang.org/x/net/http2"
)

// frame is what a write scheduler needs from a queued frame: http2.FrameWriteRequest has these
// methods. The schedulers are generic over it so that tests can feed fake frames (the fields
// of a FrameWriteRequest are unexported, so only the server can make real ones).
type frame[F any] interface {
	StreamID() uint32
	DataSize() int
	// Consume takes up to n bytes, also limited by the stream's flow-control window and the
	// peer's maximum frame size; it returns 0 frames if flow control allows nothing.
	Consume(n int32) (F, F, int)
}

// queue is one stream's frames, first in first out (as x/net's writeQueue).
type queue[F frame[F]] struct{ s []F }

func (q *queue[F]) push(f F)    { q.s = append(q.s, f) }
func (q *queue[F]) empty() bool { return len(q.s) == 0 }

// consume pops the head frame, or a part of it as large as flow control and the frame size allow.
func (q *queue[F]) consume() (F, bool) {
	var zero F
	if len(q.s) == 0 {
		return zero, false
	}
	consumed, rest, n := q.s[0].Consume(math.MaxInt32)
	switch n {
	case 0:
		return zero, false
	case 1:
		q.s[0] = zero
		q.s = q.s[1:]
	default:
		q.s[0] = rest
	}
	return consumed, true
}

// streams holds what both schedulers share: frames not tied to an open stream (SETTINGS,
// PING, WINDOW_UPDATE, GOAWAY, RST_STREAM of closed streams) and the open streams in the
// order they were opened (client requests in request order; pushed streams when promised).
type streams[F frame[F]] struct {
	control queue[F]
	order   []uint32
	queues  map[uint32]*queue[F]
	// reset tells a RST_STREAM the server queues for a stream still open: it goes out with
	// the control frames, not behind the stream's DATA (nil: frames never are).
	reset func(F) bool
}

func (s *streams[F]) OpenStream(id uint32, _ http2.OpenStreamOptions) {
	if s.queues == nil {
		s.queues = map[uint32]*queue[F]{}
	}
	if _, ok := s.queues[id]; ok {
		return
	}
	s.order = append(s.order, id)
	s.queues[id] = &queue[F]{}
}

// closeStream drops the stream and its frames; it returns the index it had in the order, or -1.
func (s *streams[F]) closeStream(id uint32) int {
	if _, ok := s.queues[id]; !ok {
		return -1
	}
	delete(s.queues, id)
	for i, o := range s.order {
		if o == id {
			s.order = append(s.order[:i], s.order[i+1:]...)
			return i
		}
	}
	return -1
}

func (s *streams[F]) AdjustStream(uint32, http2.PriorityParam) {}

func (s *streams[F]) Push(f F) {
	if q, ok := s.queues[f.StreamID()]; ok && (s.reset == nil || !s.reset(f)) {
		q.push(f)
		return
	}
	s.control.push(f)
}

// FCFS sends one response completely before any frame of the next, in the order the streams
// were opened. A stream whose next frame is not queued yet (its handler is still producing it,
// or is asleep for a configured delay) holds every later stream back: that is what first come,
// first served means, and what makes the order visible on the wire.
type FCFS[F frame[F]] struct{ streams[F] }

func (s *FCFS[F]) CloseStream(id uint32) { s.closeStream(id) }

func (s *FCFS[F]) Pop() (F, bool) {
	if f, ok := s.control.consume(); ok {
		return f, true
	}
	if len(s.order) == 0 {
		var zero F
		return zero, false
	}
	return s.queues[s.order[0]].consume()
}

// RoundRobin sends one frame (at most the peer's maximum frame size, 16 KB by default, RFC
// 9113 §4.2) of each stream that has one ready, in turn, in the order streams were opened.
type RoundRobin[F frame[F]] struct {
	streams[F]
	next int // index in order of the stream whose turn it is
}

func (s *RoundRobin[F]) CloseStream(id uint32) {
	if i := s.closeStream(id); i >= 0 && i < s.next {
		s.next--
	}
	if s.next >= len(s.order) {
		s.next = 0
	}
}

func (s *RoundRobin[F]) Pop() (F, bool) {
	if f, ok := s.control.consume(); ok {
		return f, true
	}
	n := len(s.order)
	for i := range n {
		k := (s.next + i) % n
		if f, ok := s.queues[s.order[k]].consume(); ok {
			s.next = (k + 1) % n
			return f, true
		}
	}
	var zero F
	return zero, false
}

var (
	_ http2.WriteScheduler = (*FCFS[http2.FrameWriteRequest])(nil)
	_ http2.WriteScheduler = (*RoundRobin[http2.FrameWriteRequest])(nil)
)

// isStreamReset tells the RST_STREAM x/net's server queues to reset a stream (resetStream):
// the request carries no stream, so it is a control frame, but its StreamID is the stream's.
func isStreamReset(wr http2.FrameWriteRequest) bool {
	return wr.DataSize() == 0 && strings.HasSuffix(wr.String(), "writer=http2.StreamError]")
}

// schedulerFactory makes a connection's write scheduler; sig is the connection's priority
// signals (read only when the connection is sniffed: Sniffs).
type schedulerFactory func(sig *Signals) http2.WriteScheduler

// schedulers are the origin's HTTP/2 write schedulers by name.
var schedulers = map[string]schedulerFactory{
	"fcfs": func(*Signals) http2.WriteScheduler {
		return &FCFS[fwr]{streams: streams[fwr]{reset: isStreamReset}}
	},
	"rr": func(*Signals) http2.WriteScheduler {
		return &RoundRobin[fwr]{streams: streams[fwr]{reset: isStreamReset}}
	},
	// RFC 7540 §5.3 dependency tree and weights, as the client sends them (priority.go).
	"client": func(*Signals) http2.WriteScheduler { return &Priority[fwr]{reset: isStreamReset} },
	// RFC 9218 urgency and incremental (rfc9218.go), from the connection's signals.
	"rfc9218": func(sig *Signals) http2.WriteScheduler { return NewRFC9218(sig, isStreamReset) },
}

type fwr = http2.FrameWriteRequest

// newScheduler returns the scheduler factory for a scheduler name.
func newScheduler(name string) (schedulerFactory, bool) {
	f, ok := schedulers[name]
	return f, ok
}

// sniffs tells whether a scheduler reads the client's RFC 9218 signals (h2sniff.go).
func sniffs(name string) bool { return name == "rfc9218" }
