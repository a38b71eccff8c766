package main

import (
	"crypto/tls"
	"encoding/binary"
	"net"

	"golang.org/x/net/http2/hpack"
)

const (
	h2FrameHeaders      = 0x1
	h2FrameContinuation = 0x9
	h2FramePriorityUpd  = 0x10 // RFC 9218 §7.1
	h2FlagEndHeaders    = 0x4
	h2FlagPadded        = 0x8
	h2FlagPriority      = 0x20
	h2PrefaceLen        = 24
	// sniffMaxBlock bounds what the sniffer keeps of one header block or PRIORITY_UPDATE (the
	// client is untrusted): past it the connection is no longer read for signals (x/net's own
	// MaxHeaderBytes, 1 MB, still applies to the request).
	sniffMaxBlock = 64 << 10
	// headerTableBytes is SETTINGS_HEADER_TABLE_SIZE as x/net's server announces it.
	headerTableBytes = 4096
)

// H2Sniffer reads the priority signals out of what an HTTP/2 client sends: the priority
// header field of each request (decoding every header block with its own HPACK decoder, which
// the blocks keep in step with the server's) and PRIORITY_UPDATE frames. Bytes in, Signals out;
// no other effect. After anything it cannot read it stops reading (Broken).
type H2Sniffer struct {
	sig     *Signals
	skip    int    // preface or payload bytes still to pass over
	head    []byte // the frame header being read
	payload []byte // the payload being kept
	want    int    // its length
	kind    byte
	flags   byte
	stream  uint32
	block   []byte // a header block across HEADERS and CONTINUATION
	dec     *hpack.Decoder
	field   string
	hasPrio bool
	Broken  bool
}

// NewH2Sniffer reads a connection from its first byte (the client preface).
func NewH2Sniffer(sig *Signals) *H2Sniffer {
	s := &H2Sniffer{sig: sig, skip: h2PrefaceLen}
	s.dec = hpack.NewDecoder(headerTableBytes, func(f hpack.HeaderField) {
		if f.Name == "priority" {
			if s.hasPrio {
				s.field += ", " + f.Value
			} else {
				s.field = f.Value
			}
			s.hasPrio = true
		}
	})
	s.dec.SetMaxStringLength(sniffMaxBlock)
	return s
}

// Feed reads the next bytes the client sent.
func (s *H2Sniffer) Feed(p []byte) {
	for len(p) > 0 && !s.Broken {
		switch {
		case s.skip > 0:
			n := min(s.skip, len(p))
			s.skip -= n
			p = p[n:]
		case s.want > 0:
			n := min(s.want-len(s.payload), len(p))
			s.payload = append(s.payload, p[:n]...)
			p = p[n:]
			if len(s.payload) == s.want {
				s.frame(s.payload)
				s.payload, s.want = s.payload[:0], 0
			}
		default:
			n := min(9-len(s.head), len(p))
			s.head = append(s.head, p[:n]...)
			p = p[n:]
			if len(s.head) == 9 {
				s.header()
			}
		}
	}
}

// header starts a frame: keeps the payload of the frames that carry signals, skips others.
func (s *H2Sniffer) header() {
	length := int(s.head[0])<<16 | int(s.head[1])<<8 | int(s.head[2])
	s.kind, s.flags = s.head[3], s.head[4]
	s.stream = binary.BigEndian.Uint32(s.head[5:9]) & 0x7fffffff
	s.head = s.head[:0]
	switch s.kind {
	case h2FrameHeaders, h2FrameContinuation, h2FramePriorityUpd:
		if length > sniffMaxBlock {
			s.Broken = true
			return
		}
		if length == 0 {
			s.frame(nil)
			return
		}
		s.want = length
	default:
		s.skip = length
	}
}

func (s *H2Sniffer) frame(p []byte) {
	switch s.kind {
	case h2FramePriorityUpd:
		if len(p) < 4 {
			s.Broken = true
			return
		}
		s.sig.Update(binary.BigEndian.Uint32(p[:4])&0x7fffffff, string(p[4:]))
	case h2FrameHeaders:
		if s.flags&h2FlagPadded != 0 {
			if len(p) < 1 || int(p[0]) >= len(p) {
				s.Broken = true
				return
			}
			p = p[1 : len(p)-int(p[0])]
		}
		if s.flags&h2FlagPriority != 0 {
			if len(p) < 5 {
				s.Broken = true
				return
			}
			p = p[5:]
		}
		s.block = append(s.block[:0], p...)
		s.endBlock()
	case h2FrameContinuation:
		if len(s.block)+len(p) > sniffMaxBlock {
			s.Broken = true
			return
		}
		s.block = append(s.block, p...)
		s.endBlock()
	}
}

// endBlock decodes a header block once its last frame is in.
func (s *H2Sniffer) endBlock() {
	if s.flags&h2FlagEndHeaders == 0 {
		return
	}
	s.field, s.hasPrio = "", false
	if _, err := s.dec.Write(s.block); err != nil || s.dec.Close() != nil {
		s.Broken = true
		return
	}
	// Trailers (a second block on a stream) carry no priority: recording absence is a no-op.
	s.sig.Header(s.stream, s.field, s.hasPrio)
}

// sniffedConn feeds what the client sends to a sniffer on its way to x/net's reader.
type sniffedConn struct {
	net.Conn
	sn *H2Sniffer
}

func (c sniffedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.sn.Feed(p[:n])
	return n, err
}

// sniffedTLSConn is sniffedConn over TLS: x/net reads the TLS state (ConnectionState) from it.
type sniffedTLSConn struct {
	*tls.Conn
	sn *H2Sniffer
}

func (c sniffedTLSConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.sn.Feed(p[:n])
	return n, err
}

// sniffed wraps c so that its client's priority signals reach sig.
func sniffed(c net.Conn, sig *Signals) net.Conn {
	sn := NewH2Sniffer(sig)
	if tc, ok := c.(*tls.Conn); ok {
		return sniffedTLSConn{tc, sn}
	}
	return sniffedConn{c, sn}
}
