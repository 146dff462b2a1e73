package benchenv

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
)

// ParseFlags parses args into fs the way every section's tool answers:
// -h and --help print help (the description and an example) and the flags
// on stdout and report done (exit 0); a bad flag prints the same on stderr
// and returns the error. done is false when the tool should run.
func ParseFlags(fs *flag.FlagSet, help string, args []string, stdout, stderr io.Writer) (done bool, err error) {
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err = fs.Parse(args)
	usage := func(w io.Writer) {
		fmt.Fprint(w, help)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return true, nil
	}
	if err != nil {
		usage(stderr)
		return true, err
	}
	return false, nil
}

// List splits a comma-separated flag value, dropping empty items.
func List(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// IntList is List of positive integers; flagName names the flag in the error.
func IntList(flagName, v string) ([]int, error) {
	var out []int
	for _, s := range List(v) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: bad value %q", flagName, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// Profile starts a CPU profile of this process into path and returns what
// stops it; "" profiles nothing.
func Profile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
