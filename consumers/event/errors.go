package event

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

// ErrCircuitOpen is a delivery not sent because its destination's circuit
// is open (consumers/forward's DeliverOrdered, which does not wait for
// the circuit): the consumers park the event instead (transient).
var ErrCircuitOpen = errors.New("circuit open")

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

// IsTimeout reports a deadline or network timeout, for error messages.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// Stages of a failure, the stage of a failure issue (failure_issues.stage).
const (
	StageFetch         = "fetch"    // the provider's API
	StageApply         = "apply"    // everything else: claim, decode, the projection write
	StageForwardPrefix = "forward:" // + the destination's key (a forwarder's Destination)
)

// StageError names the stage an error happened in. Its text is the
// wrapped error's: the stage is carried beside it, never in last_error.
type StageError struct {
	Stage string
	Err   error
}

func (e *StageError) Error() string { return e.Err.Error() }
func (e *StageError) Unwrap() error { return e.Err }

// InStage wraps err (nil stays nil) as a StageError of stage.
func InStage(stage string, err error) error {
	if err == nil {
		return nil
	}
	return &StageError{Stage: stage, Err: err}
}

// Stage returns the stage of err: a StageError's (the first in its chain,
// the first of several joined forward failures), else the stage an error
// in its chain names by a FailureStage method (fetch's APIError:
// StageFetch), else StageApply.
func Stage(err error) string {
	var se *StageError
	if errors.As(err, &se) && se.Stage != "" {
		return se.Stage
	}
	var named interface{ FailureStage() string }
	if errors.As(err, &named) {
		return named.FailureStage()
	}
	return StageApply
}
