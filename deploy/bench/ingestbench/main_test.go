package main

import (
	"io"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

func TestFlagsTieTheColdRowsToTheirWarmRows(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string // "" for none
	}{
		{nil, ""},
		{[]string{"-cold-c", "4"}, "-cold-c 4 must be in -c and -single-c"},
		{[]string{"-single-c", "4,64"}, "-cold-c 16 must be in -c and -single-c"},
		{[]string{"-single-c", "", "-cold-d", "0"}, ""},
		{[]string{"-c", "64", "-tracing"}, ""},
		{[]string{"-cold-window", "20s"}, "-cold-window"},
		{[]string{"-roll-span", "45s"}, "-roll-span must be a multiple of -roll-window"},
		{[]string{"-roll-width", "1m", "-roll-span", "90s"}, "at most -roll-width"},
		{[]string{"-roll-width", "0", "-roll-span", "90s"}, ""},
	} {
		o := &options{Options: benchenv.Options{Name: "ingestbench"}}
		_, err := benchenv.Parse(help, o, tc.args, io.Discard, io.Discard)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.err)
		}
	}
}
