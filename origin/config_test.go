package main

import (
	"testing"
	"time"
)

// A connection with no request in progress is kept as long as h2lab asks (its servers'
// IDLE_TIMEOUT_S, an hour), 120 s when the config does not say.
func TestIdleTimeout(t *testing.T) {
	if got := (&Config{}).idleTimeout(); got != 120*time.Second {
		t.Errorf("unset: %v, want 120s", got)
	}
	if got := (&Config{IdleTimeoutS: 3600}).idleTimeout(); got != time.Hour {
		t.Errorf("3600: %v, want 1h", got)
	}
}
