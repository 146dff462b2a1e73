package main

import "testing"

// The development OP is reachable from this machine only.
func TestListensOnLoopbackOnly(t *testing.T) {
	if got := listenAddr("9998"); got != "127.0.0.1:9998" {
		t.Fatalf("listenAddr = %q, want 127.0.0.1:9998", got)
	}
}
