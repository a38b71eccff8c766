package main

// RFC 9218 Extensible Priorities over HTTP/2: what a client asks for (the priority header
// field of a request, and PRIORITY_UPDATE frames that change it later, §7.1), and a write
// scheduler that follows it (RFC9218).
//
// x/net's own RFC 9218 scheduler cannot be chosen with Go 1.26 (http2.Server picks it only
// when net/http's DisableClientPriority exists, Go 1.27), and a WriteScheduler of our own gets
// no priority from x/net: OpenStreamOptions keeps it unexported and PRIORITY_UPDATE frames go
// only to x/net's type. So the origin reads them itself, from the bytes the client sends
// (h2Sniffer, on the connection's reads, before x/net's framer sees them), into the
// connection's signals, which the scheduler consults.

import (
	"strings"
	"sync"

	"golang.org/x/net/http2"
)

// Urgency is an RFC 9218 priority: urgency 0 (most urgent) to 7, and whether the response
// may be interleaved with others of its urgency (incremental).
type Urgency struct {
	U           uint8
	Incremental bool
}

// DefaultUrgency is RFC 9218 §4's default, u=3 and not incremental.
var DefaultUrgency = Urgency{U: 3}

// ParsePriority reads a priority field value (an RFC 8941 dictionary) over base: "u=N" with
// N in 0-7, and "i" (true), "i=?1" or "i=?0"; other members, and parameters, are ignored
// (§4: unknown parameters are ignored, an out-of-range urgency is ignored).
func ParsePriority(value string, base Urgency) Urgency {
	p := base
	for _, member := range strings.Split(value, ",") {
		member, _, _ = strings.Cut(strings.TrimSpace(member), ";")
		key, item, hasValue := strings.Cut(member, "=")
		switch key {
		case "u":
			if hasValue && len(item) == 1 && item[0] >= '0' && item[0] <= '7' {
				p.U = item[0] - '0'
			}
		case "i":
			switch {
			case !hasValue || item == "?1":
				p.Incremental = true
			case item == "?0":
				p.Incremental = false
			}
		}
	}
	return p
}

// Signals is one connection's priorities as the client signalled them, written by the
// connection's reader and read by its scheduler (another goroutine).
type Signals struct {
	mu    sync.Mutex
	prio  map[uint32]Urgency
	aware bool   // the client has sent a priority field or a PRIORITY_UPDATE
	gen   uint64 // incremented on every change
}

// Header records the priority field of stream id's request (present: whether it had one).
func (s *Signals) Header(id uint32, value string, present bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !present {
		return
	}
	s.aware = true
	s.set(id, ParsePriority(value, DefaultUrgency))
}

// Update records a PRIORITY_UPDATE for stream id (which may not be open yet, §7).
func (s *Signals) Update(id uint32, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aware = true
	s.set(id, ParsePriority(value, DefaultUrgency))
}

func (s *Signals) set(id uint32, p Urgency) {
	if s.prio == nil {
		s.prio = map[uint32]Urgency{}
	}
	s.prio[id] = p
	s.gen++
}

// Of is stream id's priority: as signalled; else RFC 9218's default once the client has
// shown it knows RFC 9218, and u=3 incremental (round robin, HTTP/2's old default, as x/net
// and quic-go do) before that.
func (s *Signals) Of(id uint32) Urgency {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.prio[id]; ok {
		return p
	}
	if s.aware {
		return DefaultUrgency
	}
	return Urgency{U: 3, Incremental: true}
}

// Gen is the number of changes so far.
func (s *Signals) Gen() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// Forget drops a closed stream's entry.
func (s *Signals) Forget(id uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.prio, id)
}

// RFC9218 sends the most urgent response that has a frame ready: within an urgency, the
// responses that are not incremental one after another in the order their streams were opened,
// then the incremental ones one frame each in turn (§10 leaves the mix to the server; this is
// x/net's and quic-go's order too). A PRIORITY_UPDATE takes effect at the next frame.
type RFC9218[F frame[F]] struct {
	streams[F]
	sig  *Signals
	prio map[uint32]Urgency
	gen  uint64
	last [8]uint32 // per urgency, the incremental stream served last
}

// NewRFC9218 is a scheduler following sig.
func NewRFC9218[F frame[F]](sig *Signals, reset func(F) bool) *RFC9218[F] {
	return &RFC9218[F]{streams: streams[F]{reset: reset}, sig: sig, prio: map[uint32]Urgency{}}
}

func (s *RFC9218[F]) OpenStream(id uint32, opt http2.OpenStreamOptions) {
	s.streams.OpenStream(id, opt)
	s.prio[id] = s.sig.Of(id)
}

func (s *RFC9218[F]) CloseStream(id uint32) {
	s.closeStream(id)
	delete(s.prio, id)
	s.sig.Forget(id)
}

// refresh takes the priorities changed since the last frame.
func (s *RFC9218[F]) refresh() {
	if g := s.sig.Gen(); g != s.gen {
		s.gen = g
		for id := range s.prio {
			s.prio[id] = s.sig.Of(id)
		}
	}
}

func (s *RFC9218[F]) Pop() (F, bool) {
	if f, ok := s.control.consume(); ok {
		return f, true
	}
	s.refresh()
	for u := range uint8(8) {
		for _, id := range s.order {
			if p := s.prio[id]; p.U == u && !p.Incremental {
				if f, ok := s.queues[id].consume(); ok {
					return f, true
				}
			}
		}
		if f, ok := s.popIncremental(u); ok {
			return f, true
		}
	}
	var zero F
	return zero, false
}

// popIncremental is the next frame of urgency u's incremental streams, round robin from the
// one after the stream served last.
func (s *RFC9218[F]) popIncremental(u uint8) (F, bool) {
	n := len(s.order)
	start := 0
	for i, id := range s.order {
		if id == s.last[u] {
			start = i + 1
			break
		}
	}
	for k := range n {
		id := s.order[(start+k)%n]
		if p := s.prio[id]; p.U == u && p.Incremental {
			if f, ok := s.queues[id].consume(); ok {
				s.last[u] = id
				return f, true
			}
		}
	}
	var zero F
	return zero, false
}
