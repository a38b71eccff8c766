// This file is added to quic-go's internal/congestion package by the origin's build (an
// overlay: src/h2lab/servers/quicgo.py), with the two calls in NewCubicSender that use it.
// quic-go has no setting for its congestion control: it makes every sender Reno with an
// initial window of 32 packets. These hooks let the origin ask for its CUBIC or another
// window, and record what the last sender was made with, which the origin reports per trial.

package congestion

import (
	"sync/atomic"

	"github.com/quic-go/quic-go/internal/protocol"
)

var (
	h2labAlgorithm      atomic.Value // "", "cubic" or "reno": what the origin asks for
	h2labInitialPackets atomic.Int64 // 0: quic-go's own
	h2labRanReno        atomic.Int32 // 0: no sender yet; 1: Reno; 2: CUBIC
	h2labRanWindow      atomic.Int64 // the last sender's initial window, bytes
)

// H2labSet asks every sender made from now on for algorithm ("cubic", "reno"; "" keeps
// quic-go's choice) and an initial window of initialPackets (0 keeps quic-go's).
func H2labSet(algorithm string, initialPackets int) {
	h2labAlgorithm.Store(algorithm)
	h2labInitialPackets.Store(int64(initialPackets))
}

// H2labRan is what the last sender was made with: "reno" or "cubic" ("" before the first)
// and its initial congestion window in bytes.
func H2labRan() (string, int64) {
	switch h2labRanReno.Load() {
	case 1:
		return "reno", h2labRanWindow.Load()
	case 2:
		return "cubic", h2labRanWindow.Load()
	}
	return "", 0
}

func h2labReno(reno bool) bool {
	switch h2labAlgorithm.Load() {
	case "cubic":
		reno = false
	case "reno":
		reno = true
	}
	if reno {
		h2labRanReno.Store(1)
	} else {
		h2labRanReno.Store(2)
	}
	return reno
}

func h2labWindow(packets protocol.ByteCount) protocol.ByteCount {
	if n := h2labInitialPackets.Load(); n > 0 {
		packets = protocol.ByteCount(n)
	}
	h2labRanWindow.Store(int64(packets * initialMaxDatagramSize))
	return packets
}
