//go:build h2labcc

package main

import "github.com/quic-go/quic-go"

// The origin's build adds hooks to quic-go (an overlay, _overlay/ and
// src/h2lab/servers/quicgo.py) and this tag: its congestion control can be asked for and read.

func setQUICCongestionControl(algorithm string, initialPackets int) error {
	quic.H2labSetCongestionControl(algorithm, initialPackets)
	return nil
}

func quicCongestionControl() (string, int64) {
	return quic.H2labCongestionControl()
}
