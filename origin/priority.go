package main

import (
	"fmt"
	"slices"
	"sort"

	"golang.org/x/net/http2"
)

// Priority follows the client's RFC 7540 §5.3 priorities: a dependency tree of streams with
// weights, each subtree served in turn by the DATA bytes it has sent relative to its weight.
// It keeps x/net's rules (NewPriorityWriteScheduler(nil): the same tree operations, the same
// sibling order, the last 10 closed and 10 idle streams kept in the tree so that a stream
// depending on one that just closed keeps its place in the client's chain) with two changes:
//
//   - A closed stream's frames are dropped with it. x/net v0.62 returns the queue of a stream
//     that closes to its pool while the node it keeps in the tree still holds the same slots,
//     so when a stream closes with frames queued (a client's RST_STREAM, a browser context
//     that goes away) the kept node later pops zeroed frames, or another stream's: h2lab's
//     origin died with a nil dereference in startFrameWrite right after a 4.6 MB page on
//     cell-poor (the stack of go-mitmproxy#103, which turns the closed-node keeping off).
//   - Moving a subtree moves its byte count with it, and siblings that tie keep the order in
//     which they joined their parent (x/net's sort is not stable).
type Priority[F frame[F]] struct {
	root   pnode[F] // its queue holds the frames of no open stream (SETTINGS, PING, RST_STREAM...)
	nodes  map[uint32]*pnode[F]
	closed []*pnode[F] // closed streams kept in the tree, oldest first
	idle   []*pnode[F] // streams named by a PRIORITY frame but not opened, oldest first
	maxID  uint32
	// reset tells a RST_STREAM the server queues for a stream still open: it goes out with
	// the control frames, not behind the stream's DATA (nil: frames never are).
	reset func(F) bool
}

const (
	defaultWeight = 15 // 16 on the wire (RFC 7540 §5.3.5); PriorityParam weights are zero-based
	keepClosed    = 10
	keepIdle      = 10
)

type nodeState int

const (
	stateIdle nodeState = iota
	stateOpen
	stateClosed
)

type pnode[F frame[F]] struct {
	id      uint32
	q       queue[F]
	weight  uint8
	state   nodeState
	parent  *pnode[F]
	kids    []*pnode[F] // in the order they joined
	bytes   int64       // DATA bytes this stream sent while open
	subtree int64       // bytes of this node and of every node below it
}

func (s *Priority[F]) node(id uint32) *pnode[F] {
	if s.nodes == nil {
		s.nodes = map[uint32]*pnode[F]{0: &s.root} // a dependency on stream 0 is on the root
	}
	return s.nodes[id]
}

// setParent moves n (with its subtree and its byte count) under parent; nil detaches it.
func (s *Priority[F]) setParent(n, parent *pnode[F]) {
	for x := parent; x != nil; x = x.parent {
		if x == n { // a loop would spin every later walk up the tree: fail loudly instead
			panic(fmt.Sprintf("priority tree: stream %d under its own descendant", n.id))
		}
	}
	if old := n.parent; old != nil {
		if i := slices.Index(old.kids, n); i >= 0 {
			old.kids = slices.Delete(old.kids, i, i+1)
		}
		for x := old; x != nil; x = x.parent {
			x.subtree -= n.subtree
		}
	}
	n.parent = parent
	if parent != nil {
		parent.kids = append(parent.kids, n)
		for x := parent; x != nil; x = x.parent {
			x.subtree += n.subtree
		}
	}
}

func (s *Priority[F]) addBytes(n *pnode[F], b int64) {
	n.bytes += b
	for x := n; x != nil; x = x.parent {
		x.subtree += b
	}
}

// removeNode takes n out of the tree; its children move up to its parent.
func (s *Priority[F]) removeNode(n *pnode[F]) {
	for _, k := range slices.Clone(n.kids) {
		s.setParent(k, n.parent)
	}
	s.setParent(n, nil)
	delete(s.nodes, n.id)
}

// keep appends n to a list of kept nodes of at most limit, removing the oldest from the tree.
func (s *Priority[F]) keep(list []*pnode[F], limit int, n *pnode[F]) []*pnode[F] {
	if len(list) == limit {
		s.removeNode(list[0])
		list = slices.Delete(list, 0, 1)
	}
	return append(list, n)
}

func (s *Priority[F]) OpenStream(id uint32, options http2.OpenStreamOptions) {
	if n := s.node(id); n != nil {
		if n.state == stateIdle { // named by a PRIORITY frame before it opened
			n.state = stateOpen
			s.idle = slices.DeleteFunc(s.idle, func(x *pnode[F]) bool { return x == n })
		}
		return
	}
	// §5.3.5: a new stream depends on stream 0, a pushed stream on its associated stream,
	// both with weight 16 until the client says otherwise.
	parent := s.node(options.PusherID)
	if parent == nil {
		parent = &s.root
	}
	n := &pnode[F]{id: id, weight: defaultWeight, state: stateOpen}
	s.setParent(n, parent)
	s.nodes[id] = n
	s.maxID = max(s.maxID, id)
}

func (s *Priority[F]) AdjustStream(id uint32, p http2.PriorityParam) {
	if id == 0 {
		return
	}
	n := s.node(id)
	if n == nil {
		// a closed stream already gone from the tree (id <= maxID), or an idle one used to
		// group others
		if id <= s.maxID {
			return
		}
		s.maxID = id
		n = &pnode[F]{id: id, weight: defaultWeight, state: stateIdle}
		s.setParent(n, &s.root)
		s.nodes[id] = n
		s.idle = s.keep(s.idle, keepIdle, n)
	}
	// §5.3.1: a dependency on a stream not in the tree gives the default priority.
	parent := s.node(p.StreamDep)
	if parent == nil {
		s.setParent(n, &s.root)
		n.weight = defaultWeight
		return
	}
	if parent == n {
		return
	}
	// §5.3.3: made dependent on one of its own dependants, that dependant first moves up to
	// n's former parent.
	for x := parent.parent; x != nil; x = x.parent {
		if x == n {
			s.setParent(parent, n.parent)
			break
		}
	}
	if n.parent != parent {
		s.setParent(n, parent)
	}
	// §5.3.1: exclusive makes n the sole child of parent, adopting parent's other children.
	// (n moves first: one of those children may be n's ancestor until then, and adopting it
	// would close a loop.)
	if p.Exclusive {
		for _, k := range slices.Clone(parent.kids) {
			if k != n {
				s.setParent(k, n)
			}
		}
	}
	n.weight = p.Weight
}

func (s *Priority[F]) CloseStream(id uint32) {
	n := s.node(id)
	if n == nil || n.state != stateOpen {
		return
	}
	n.state = stateClosed
	s.addBytes(n, -n.bytes)
	n.q = queue[F]{} // its frames go with it; nothing is shared with any other queue
	s.closed = s.keep(s.closed, keepClosed, n)
}

func (s *Priority[F]) Push(f F) {
	n := s.node(f.StreamID())
	if n == nil || n.state != stateOpen || (s.reset != nil && s.reset(f)) {
		s.root.q.push(f)
		return
	}
	n.q.push(f)
}

func (s *Priority[F]) Pop() (F, bool) {
	var out F
	found := s.walk(&s.root, func(n *pnode[F]) bool {
		f, ok := n.q.consume()
		if !ok {
			return false
		}
		s.addBytes(n, int64(f.DataSize()))
		out = f
		return true
	})
	return out, found
}

// walk offers f every node with frames queued, parents before children, siblings by the
// bytes their subtrees sent relative to their weights (fewest first), until f takes one.
func (s *Priority[F]) walk(n *pnode[F], f func(*pnode[F]) bool) bool {
	if !n.q.empty() && f(n) {
		return true
	}
	switch len(n.kids) {
	case 0:
		return false
	case 1:
		return s.walk(n.kids[0], f)
	}
	kids := slices.Clone(n.kids)
	sort.SliceStable(kids, func(i, k int) bool { return servedLess(kids[i], kids[k]) })
	for _, k := range kids {
		if s.walk(k, f) {
			return true
		}
	}
	return false
}

// servedLess: a has sent fewer bytes than b relative to their weights (§5.3.2: siblings share
// by weight); among siblings that sent nothing, the heavier first.
func servedLess[F frame[F]](a, b *pnode[F]) bool {
	wa, wb := float64(a.weight)+1, float64(b.weight)+1
	ba, bb := float64(a.subtree), float64(b.subtree)
	switch {
	case ba == 0 && bb == 0:
		return wa > wb
	case bb == 0:
		return false
	case ba == 0:
		return true
	}
	return ba/wa < bb/wb
}

var _ http2.WriteScheduler = (*Priority[http2.FrameWriteRequest])(nil)
