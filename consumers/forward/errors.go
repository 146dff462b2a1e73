package forward

import "fmt"

// Error is a delivery the destination answered with a non-2xx status.
type Error struct {
	Status int
	Dest   string
	Body   string // the first 256 bytes
}

func (e *Error) Error() string {
	return fmt.Sprintf("forward to %s: status %d: %s", e.Dest, e.Status, e.Body)
}

// FailureSummary is what a failure issue keeps of the answer: the
// destination and the status, never the body the service answered
// ("forward to https://team.example/hook: status 503").
func (e *Error) FailureSummary() string {
	return fmt.Sprintf("forward to %s: status %d", e.Dest, e.Status)
}

// TransformError is a delivery its entry's transform failed on (an
// exception, a timeout, an answer that is not a delivery): permanent.
type TransformError struct {
	Dest string
	Err  error
}

func (e *TransformError) Error() string { return fmt.Sprintf("forward to %s: %v", e.Dest, e.Err) }
func (e *TransformError) Unwrap() error { return e.Err }

// FailureSummary is what a failure issue keeps: that the transform failed,
// never the exception's text (it may quote the payload).
func (e *TransformError) FailureSummary() string {
	return fmt.Sprintf("forward to %s: transform failed", e.Dest)
}
