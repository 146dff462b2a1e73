package benchenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Main is a section's main: run's stdout is printed after the run's stamp
// (Stamp.Mark); SIGINT or SIGTERM cancel its context; an error exits 1.
func Main(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	st := NewStamp()
	var out bytes.Buffer
	err := run(ctx, os.Args[1:], &out, os.Stderr)
	stop()
	st.End = LoadAvg()
	_, _ = os.Stdout.Write(st.Mark(out.Bytes()))
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// Stamp is a section's first line: commit, date, load average at start and end.
type Stamp struct {
	Commit     string
	Date       time.Time
	Start, End float64 // 1-minute load averages
	Cores      int
}

// NewStamp reads the commit ("unknown" outside a checkout) and the load.
func NewStamp() Stamp {
	commit := "unknown"
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(out))
	}
	return Stamp{Commit: commit, Date: time.Now().UTC(), Start: LoadAvg(), Cores: runtime.NumCPU()}
}

// Disturbed reports a load average at start above 1.5 × the cores.
func (s Stamp) Disturbed() bool { return s.Start > 1.5*float64(s.Cores) }

// heading is a "## " heading line of a section's Markdown.
var heading = regexp.MustCompile(`(?m)^## .*$`)

// Mark prefixes out with the stamp's line and marks its "## " headings if DISTURBED.
func (s Stamp) Mark(out []byte) []byte {
	if !heading.Match(out) {
		return out
	}
	if s.Disturbed() {
		out = heading.ReplaceAll(out, fmt.Appendf(nil, "$0 (DISTURBED: load average %.2f at start)", s.Start))
	}
	return append(fmt.Appendf(nil, "Run: commit %s, %s, load average (1 min) %.2f at start and %.2f at end, %d cores.\n\n",
		s.Commit, s.Date.Format("2006-01-02 15:04 UTC"), s.Start, s.End, s.Cores), out...)
}

// LoadAvg is the 1-minute load average, which every report quotes.
func LoadAvg() float64 {
	raw, _ := os.ReadFile("/proc/loadavg")
	var v float64
	_, _ = fmt.Sscan(string(raw), &v)
	return v
}

// Every calls f every d until stop, which cancels f's context and waits.
func Every(ctx context.Context, d time.Duration, f func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			f(ctx)
		}
	}()
	return func() { cancel(); <-done }
}

// Until calls f every interval until it is done, fails, ctx ends or limit passes.
func Until(ctx context.Context, every, limit time.Duration, f func() (done bool, err error)) error {
	deadline := time.Now().Add(limit)
	for {
		done, err := f()
		switch {
		case done || err != nil:
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		case time.Now().After(deadline):
			return ErrNotWithin
		}
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
}

// ErrNotWithin is Until's limit passing.
var ErrNotWithin = errors.New("not within the time limit")
