// This file is added to quic-go's root package by the origin's build (an overlay:
// src/h2lab/servers/quicgo.py), so that the origin reaches the hooks added to its internal
// congestion package (congestion_h2lab.go).

package quic

import "github.com/quic-go/quic-go/internal/congestion"

// H2labSetCongestionControl asks the connections made from now on for algorithm ("cubic",
// "reno", or "" for quic-go's Reno) and an initial window of initialPackets (0: quic-go's 32).
func H2labSetCongestionControl(algorithm string, initialPackets int) {
	congestion.H2labSet(algorithm, initialPackets)
}

// H2labCongestionControl is what the last connection's sender was made with: its algorithm
// ("reno" or "cubic"; "" before the first) and initial window in bytes.
func H2labCongestionControl() (string, int64) {
	return congestion.H2labRan()
}
