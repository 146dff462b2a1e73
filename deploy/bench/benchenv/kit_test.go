package benchenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
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

// The figures the tables print: quantiles of a Hist, medians and digit
// groups.
func TestStats(t *testing.T) {
	h := NewHist()
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	if q := h.Q(0.99); q < 98*time.Millisecond || q > 100*time.Millisecond {
		t.Errorf("p99 of 1..100 ms: %s", q)
	}
	if d := h.Q(1) - 100*time.Millisecond; d < 0 || d > 100*time.Microsecond || (*Hist)(nil).Q(0.5) != 0 { // three significant digits
		t.Errorf("max %s, empty %s", h.Q(1), (*Hist)(nil).Q(0.5))
	}
	if m := Median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Errorf("median %v", m)
	}
	if s := Thousands(-1234567.4); s != "-1 234 567" {
		t.Errorf("Thousands: %q", s)
	}
}

// Every scheme's deliveries, the reference scheme's included, are requests
// its verifier accepts.
func TestDeliveriesVerify(t *testing.T) {
	secret := []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	for _, scheme := range append([]string{"reference"}, MixSchemes...) {
		d := NewDeliveries("p", "127.0.0.1:1", secret, 300)
		if scheme != "reference" {
			var err error
			if d, err = NewSchemeDeliveries(scheme, "127.0.0.1:1", secret, 300); err != nil {
				t.Fatal(err)
			}
		}
		now := time.Now()
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(d.Next(now))))
		if err != nil {
			t.Fatalf("%s: %v", scheme, err)
		}
		body, _ := io.ReadAll(req.Body)
		if !d.w.form && !json.Valid(body) {
			t.Errorf("%s: body is not JSON: %s", scheme, body)
		}
		cfg := d.cfg
		cfg.Secrets = []signature.Secret{{ID: "bench", Value: secret}}
		v, err := signature.New(cfg)
		if err != nil {
			t.Fatalf("%s: %v", scheme, err)
		}
		if _, err := v.Verify(&signature.Request{Method: req.Method, RawQuery: req.URL.RawQuery, Header: req.Header, Body: body}, now); err != nil {
			t.Errorf("%s: %v", scheme, err)
		}
	}
}
