package benchenv

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestStampMarksDisturbedRuns(t *testing.T) {
	out := []byte("## Webhook receiver\n\ntext\n\n### Sub\n")
	quiet := Stamp{Commit: "abc1234", Date: time.Date(2026, 11, 27, 13, 0, 0, 0, time.UTC), Start: 0.5, End: 0.7, Cores: 2}
	got := string(quiet.Mark(out))
	if !strings.HasPrefix(got, "Run: commit abc1234, 2026-11-27 13:00 UTC, load average (1 min) 0.50 at start and 0.70 at end, 2 cores.\n\n## Webhook receiver\n") {
		t.Fatalf("quiet run:\n%s", got)
	}
	busy := quiet
	busy.Start = 3.2
	got = string(busy.Mark(out))
	if !strings.Contains(got, "\n## Webhook receiver (DISTURBED: load average 3.20 at start)\n") || strings.Contains(got, "### Sub (DISTURBED") {
		t.Fatalf("disturbed run:\n%s", got)
	}
	if got := string(busy.Mark([]byte("usage\n"))); got != "usage\n" {
		t.Fatalf("output without a heading changed: %q", got)
	}
}

// Flags registers the tagged fields of embedded and unexported structs,
// with their defaults, lists and help.
func TestFlagsFromTags(t *testing.T) {
	var o struct {
		Options
		d    time.Duration `flag:"d" default:"15s" help:"duration"`
		c    []int         `flag:"c" default:"16,64" help:"connections"`
		mix  []string      `flag:"mix" default:"a,b" help:"schemes"`
		none []string      `flag:"none" help:"empty"`
	}
	done, err := Parse("help\n", &o, []string{"-keep", "-mix", "", "-c", "8"}, io.Discard, io.Discard)
	if done || err != nil || !o.Keep || o.d != 15*time.Second || len(o.mix) != 0 || len(o.c) != 1 || o.c[0] != 8 || o.none != nil {
		t.Fatalf("parsed: done %v, err %v, %+v", done, err, o)
	}
	if done, err := Parse("help\n", &o, []string{"-c", "0"}, io.Discard, io.Discard); !done || err == nil {
		t.Fatalf("-c 0: done %v, err %v", done, err)
	}
}
