package main

import (
	"context"
	"fmt"

	"github.com/gatehouse/gatehouse/internal/version"
)

// runVersion prints the release version (internal/version) and what the
// toolchain recorded about this binary: the VCS revision ("unknown"
// outside a repository), whether the tree was modified, the module version
// and the Go version.
func runVersion(_ context.Context, e env, args []string) error {
	fs, _ := newFlags("version", e)
	if err := fs.Parse(args); err != nil {
		return err
	}
	_, err := fmt.Fprintln(e.stdout, version.ReadBuild().String())
	return err
}
