package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The command line people already know: help to stdout with exit 0, per
// subcommand with a description and an example, `help <sub>`, `version`,
// and errors for a missing or unknown subcommand.
func TestCLIConventions(t *testing.T) {
	call := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, func(string) string { return "" }, &out, &errOut)
		return out.String(), errOut.String(), err
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		out, errOut, err := call(args...)
		if err != nil || !strings.Contains(out, "usage: gatehouse <subcommand>") || !strings.Contains(out, "Example:") || errOut != "" {
			t.Errorf("%v: err=%v stdout=%q stderr=%q", args, err, out, errOut)
		}
	}
	for _, sc := range subcommands() {
		for _, args := range [][]string{{"help", sc.name}, {sc.name, "--help"}, {sc.name, "-h"}} {
			out, errOut, err := call(args...)
			if err != nil || !strings.Contains(out, "usage: gatehouse "+sc.name) || !strings.Contains(out, sc.about) ||
				!strings.Contains(out, "Example:\n  "+sc.example) || errOut != "" {
				t.Errorf("%v: err=%v stdout=%q stderr=%q", args, err, out, errOut)
			}
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if out, _, err := call(args...); err != nil || !strings.HasPrefix(out, "gatehouse ") || !strings.Contains(out, "revision ") {
			t.Errorf("%v: %v %q", args, err, out)
		}
	}
	if _, errOut, err := call(); err == nil || !strings.Contains(errOut, "subcommands:") {
		t.Errorf("no subcommand: %v %q", err, errOut)
	}
	if _, errOut, err := call("nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(errOut, "subcommands:") {
		t.Errorf("unknown subcommand: %v %q", err, errOut)
	}
	if _, _, err := call("help", "nope"); err == nil {
		t.Error("help of an unknown subcommand succeeded")
	}
	if _, errOut, err := call("serve", "--no-such-flag"); err == nil || !strings.Contains(errOut, "flag provided but not defined") {
		t.Errorf("bad flag: %v %q", err, errOut)
	}
}
