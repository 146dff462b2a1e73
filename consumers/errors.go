package consumers

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// Error classes carried in the gatehouse_error_class header and in
// inbox.last_error_class.
const (
	ClassTransient = "transient" // retried through the retry topics
	ClassPermanent = "permanent" // dead-lettered at once
)

// PermanentError marks a failure that no retry can fix: a 4xx other than 429
// from the provider API, an undecodable record. Such records go straight to
// the dead-letter topic.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err as a PermanentError.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// Permanentf is fmt.Errorf wrapped as a PermanentError.
func Permanentf(format string, args ...any) error {
	return &PermanentError{Err: fmt.Errorf(format, args...)}
}

// Classify returns ClassPermanent for a PermanentError anywhere in err's
// chain and ClassTransient for everything else (timeouts, network errors,
// 5xx and 429 answers, database errors, an inbox row not visible yet).
func Classify(err error) string {
	var p *PermanentError
	if errors.As(err, &p) {
		return ClassPermanent
	}
	return ClassTransient
}

// isTimeout reports a deadline or network timeout, for error messages.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}
