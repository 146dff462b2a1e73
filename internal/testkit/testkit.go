// Package testkit holds the small helpers that several packages' tests
// share (real services start through internal/testenv, not here).
package testkit

import (
	"bytes"
	"sync"
)

// SyncBuffer collects output written concurrently (a handler's or a
// process's logs) while a test reads it; safe under go test -race.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
