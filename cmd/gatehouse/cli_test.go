package main

import (
	"bytes"
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
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
	// Flag lines render as "-name type": a backquoted word in a usage
	// string would become the argument's name.
	for _, sc := range subcommands() {
		out, _, _ := call("help", sc.name)
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(line, "  -") {
				if len(f) > 2 || (len(f) == 2 && !slices.Contains([]string{"string", "int", "duration", "float", "uint", "value"}, f[1])) {
					t.Errorf("%s: flag line %q", sc.name, line)
				}
			}
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

// TestTailFailsFastWithoutBroker: tail names the brokers it tried and gives
// up within seconds when none answers, instead of waiting silently.
func TestTailFailsFastWithoutBroker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var out, errOut bytes.Buffer
	start := time.Now()
	err = run(context.Background(), []string{"tail", "--topic", "t", "--brokers", addr},
		func(string) string { return "" }, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("tail with no broker: err=%v stderr=%q", err, errOut.String())
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("tail took %v to give up", d)
	}
}
