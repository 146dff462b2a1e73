package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

// runVersion prints the module version and the VCS revision recorded in
// the binary's build information ("(devel)" and "unknown" for a build
// outside a module version or a repository).
func runVersion(_ context.Context, e env, args []string) error {
	fs, _ := newFlags("version", e)
	if err := fs.Parse(args); err != nil {
		return err
	}
	version, revision, dirty := "(devel)", "unknown", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = " (modified)"
				}
			}
		}
	}
	_, err := fmt.Fprintf(e.stdout, "gatehouse %s revision %s%s\n", version, revision, dirty)
	return err
}
