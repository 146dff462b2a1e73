package schemas

import (
	"slices"
	"testing"
)

// The terminal states are the final ones and dead, each a state of
// States(), and Terminal agrees with the list.
func TestTerminalStates(t *testing.T) {
	want := []string{StateSucceeded, StateIgnoredStale, StateSkipped, StateDead}
	if got := TerminalStates(); !slices.Equal(got, want) {
		t.Fatalf("TerminalStates() = %v, want %v", got, want)
	}
	for _, s := range States() {
		if got, want := Terminal(s), slices.Contains(TerminalStates(), s); got != want {
			t.Errorf("Terminal(%q) = %v, want %v", s, got, want)
		}
		if Final(s) && !Terminal(s) {
			t.Errorf("%q is final but not terminal", s)
		}
	}
	if Final(StateDead) || !Terminal(StateDead) {
		t.Error("dead must be terminal and not final")
	}
	for _, s := range TerminalStates() {
		if !slices.Contains(States(), s) {
			t.Errorf("terminal state %q is not in States()", s)
		}
	}
	ts := TerminalStates()
	ts[0] = "changed"
	if TerminalStates()[0] != StateSucceeded {
		t.Error("TerminalStates shares its slice with callers")
	}
}
