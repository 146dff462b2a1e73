package schemas

// processing_state of an inbox row (the inbox table's CHECK constraint in
// migrations/00001_baseline.sql lists the same values). The receiver
// writes pending; consumers and the replay tool move it:
//
//	pending ──claim──▶ processing ──effect applied──────────▶ succeeded
//	                       │      ──older or equal version──▶ ignored_stale
//	                       │      ──no handler for the type─▶ skipped
//	                       ├──transient failure, retries left──▶ retrying ──claim──▶ processing
//	                       └──permanent failure or retries exhausted──▶ dead
//	pending | retrying ──erased (admin.Erase)──▶ skipped
//	dead | retrying | pending | processing ──replay──▶ pending (attempts reset to 0)
//	succeeded | ignored_stale | skipped ──replay --force──▶ pending
//
// succeeded, ignored_stale and skipped are final: a record of a finished
// event (a Kafka duplicate, a stale retry copy) changes nothing.
const (
	StatePending      = "pending"
	StateProcessing   = "processing"
	StateSucceeded    = "succeeded"
	StateIgnoredStale = "ignored_stale"
	StateSkipped      = "skipped"
	StateRetrying     = "retrying"
	StateDead         = "dead"
)

// States lists every processing_state, in the order an event meets them
// (a new slice each call).
func States() []string {
	return []string{StatePending, StateProcessing, StateSucceeded, StateIgnoredStale, StateSkipped, StateRetrying, StateDead}
}

// FinalStates lists the final success states, for SQL that needs the set
// (processing_state = ANY($n)); a new slice each call.
func FinalStates() []string { return []string{StateSucceeded, StateIgnoredStale, StateSkipped} }

// TerminalStates lists the states an event ends in and stays in until a
// replay: the final success states and dead (for SQL that waits for a
// pipeline to settle, processing_state <> ALL($n)); a new slice each call.
func TerminalStates() []string { return append(FinalStates(), StateDead) }

// Terminal reports whether state is one an event ends in (final or dead).
func Terminal(state string) bool { return Final(state) || state == StateDead }

// Final reports whether state is a final success state.
func Final(state string) bool {
	return state == StateSucceeded || state == StateIgnoredStale || state == StateSkipped
}
