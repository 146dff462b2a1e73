package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// env bundles what every subcommand receives from run.
type env struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
}

type subcommand struct {
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

// subcommands is filled by each subcommand's file in an init function.
var subcommands = map[string]subcommand{}

func register(name, summary string, fn func(ctx context.Context, e env, args []string) error) {
	subcommands[name] = subcommand{summary: summary, run: fn}
}

// run is the whole program: main only supplies the process's context,
// arguments, environment and output streams.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := env{getenv: getenv, stdout: stdout, stderr: stderr}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return errors.New("missing subcommand")
		}
		return nil
	}
	sc, ok := subcommands[args[0]]
	if !ok {
		usage(stderr)
		return fmt.Errorf("unknown subcommand %q", args[0])
	}
	return sc.run(ctx, e, args[1:])
}

func usage(w io.Writer) {
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("usage: gatehouse <subcommand> [flags]\n\nsubcommands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, subcommands[n].summary)
	}
	_, _ = io.WriteString(w, b.String())
}

// newFlags returns a flag set with the common --config flag.
func newFlags(name string, e env) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("gatehouse "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	cfg := fs.String("config", "gatehouse.yaml", "path of the YAML configuration file")
	return fs, cfg
}
