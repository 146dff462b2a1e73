package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/gatehouse/gatehouse/internal/doctor"
)

// runDoctor is `gatehouse doctor --config F`: one line per check of the
// deployment the file describes, ✓, ✗ with the fix, or ○ skipped with the
// reason, then the tally; it fails when any check failed. Nothing is changed anywhere (internal/doctor).
func runDoctor(ctx context.Context, e env, args []string) error {
	fs, cfgPath := newFlags("doctor", e)
	timeout := fs.Duration("timeout", doctorTimeout, "bound of each network check")
	if err := fs.Parse(args); err != nil {
		return err
	}
	raw, err := os.ReadFile(*cfgPath)
	if err != nil {
		return fmt.Errorf("doctor: %w", err)
	}
	checks := doctor.Run(ctx, doctor.Options{Raw: raw, Path: *cfgPath, Getenv: e.getenv, Timeout: *timeout})
	if t := doctor.Write(e.stdout, checks); t.Failed > 0 {
		return fmt.Errorf("doctor: %d of %d checks failed (%d skipped)", t.Failed, t.Passed+t.Failed, t.Skipped)
	}
	return nil
}

const doctorTimeout = 5 * time.Second
