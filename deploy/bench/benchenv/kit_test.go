package benchenv

import (
	"context"
	"flag"
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

func TestStats(t *testing.T) {
	if got := Median([]float64{10, 30, 20}); got != 20 {
		t.Errorf("median = %v", got)
	}
	if got := Median([]float64{10, 30}); got != 20 {
		t.Errorf("median of two = %v", got)
	}
	h := NewHist()
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	if p50 := h.Q(0.5); (p50 - 50*time.Millisecond).Abs() > 100*time.Microsecond {
		t.Errorf("p50 = %v", p50)
	}
	if p99 := h.Q(0.99); (p99 - 99*time.Millisecond).Abs() > 100*time.Microsecond {
		t.Errorf("p99 = %v", p99)
	}
	if h.N() != 100 || NewHist().Q(0.99) != 0 {
		t.Errorf("n = %d", h.N())
	}
	if got := Thousands(1234567); got != "1 234 567" {
		t.Errorf("thousands = %q", got)
	}
}

func TestFlagsFromTags(t *testing.T) {
	var o struct {
		N     int           `flag:"n" default:"20000" help:"events"`
		D     time.Duration `flag:"d" default:"15s" help:"duration"`
		R     float64       `flag:"rate" default:"2.5" help:"rate"`
		S     string        `flag:"dir" help:"directory"`
		K     bool          `flag:"keep" help:"keep"`
		k     int           `flag:"k" default:"3" help:"unexported"`
		plain int
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	Flags(fs, &o)
	if o.N != 20000 || o.k != 3 || o.D != 15*time.Second || o.R != 2.5 || o.S != "" || o.K {
		t.Fatalf("defaults: %+v", o)
	}
	if err := fs.Parse([]string{"-n", "5", "-keep", "-dir", "x"}); err != nil {
		t.Fatal(err)
	}
	if o.N != 5 || !o.K || o.S != "x" {
		t.Fatalf("parsed: %+v", o)
	}
	if fs.Lookup("d").DefValue != "15s" {
		t.Errorf("help default %q", fs.Lookup("d").DefValue)
	}
}

func TestTable(t *testing.T) {
	var b strings.Builder
	tb := NewTable(&b, "path", "rows>")
	tb.Row("relay", 3)
	tb.Rowf("%s | %d", "poll", 4)
	tb.Row("short")
	want := "| path | rows |\n|---|---:|\n| relay | 3 |\n| poll | 4 |\n| short |  |\n"
	if b.String() != want {
		t.Fatalf("table:\n%q\nwant\n%q", b.String(), want)
	}
}

func TestEventID(t *testing.T) {
	d := NewDeliveries("p", "h:1", []byte("whsec_x"), 0)
	if id := eventID(d.Next(time.Now())); id != "1000000000001" {
		t.Fatalf("event id %q", id)
	}
	if id := eventID([]byte("POST / HTTP/1.1\r\n\r\n{}")); id != "" {
		t.Fatalf("no id: %q", id)
	}
}

func TestFlagsListsAndEmbeddedOptions(t *testing.T) {
	var o struct {
		Options
		c    []int    `flag:"c" default:"16,64" help:"connections"`
		mix  []string `flag:"mix" default:"a,b" help:"schemes"`
		none []string `flag:"none" help:"empty"`
	}
	done, err := Parse("help\n", &o, []string{"-keep", "-mix", "", "-c", "8"}, io.Discard, io.Discard)
	if done || err != nil || !o.Keep || len(o.mix) != 0 || len(o.c) != 1 || o.c[0] != 8 || o.none != nil {
		t.Fatalf("parsed: done %v, err %v, %+v", done, err, o)
	}
	if done, err := Parse("help\n", &o, []string{"-c", "0"}, io.Discard, io.Discard); !done || err == nil {
		t.Fatalf("-c 0: done %v, err %v", done, err)
	}
}

func TestLoopAndPace(t *testing.T) {
	r := Loop(context.Background(), 2, 100*time.Millisecond, func(int) error { time.Sleep(time.Millisecond); return nil })
	if ok, failed := r.Counts(); ok < 20 || failed != 0 || r.Latencies().N() != ok || len(r.PerSecond()) != 1 {
		t.Fatalf("loop: %d ok, %d failed, %d seconds", ok, failed, len(r.PerSecond()))
	}
	n, err := Pace(context.Background(), 1000, 100*time.Millisecond, func(int) error { return nil })
	if err != nil || n < 80 || n > 100 {
		t.Fatalf("pace: %d items, %v", n, err)
	}
}
