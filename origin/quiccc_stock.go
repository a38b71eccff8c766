//go:build !h2labcc

package main

import "fmt"

// Built without h2lab's quic-go overlay (go vet, go test): quic-go's own congestion control,
// which cannot be asked for and is not read.

func setQUICCongestionControl(algorithm string, initialPackets int) error {
	if algorithm != "" || initialPackets != 0 {
		return fmt.Errorf("quic_cc %q, quic_initcwnd %d: built without the quic-go overlay",
			algorithm, initialPackets)
	}
	return nil
}

func quicCongestionControl() (string, int64) { return "", 0 }
