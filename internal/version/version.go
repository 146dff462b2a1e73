// Package version holds gatehouse's release version: the one place it is
// written in code. CHANGELOG.md's latest release names the same version
// (a test holds them together).
package version

import (
	"fmt"
	"runtime/debug"
)

// Release is gatehouse's semantic version.
const Release = "0.1.0"

// Build is what the Go toolchain recorded about the binary: the module
// version ("(devel)" outside a module version), the VCS revision
// ("unknown" outside a repository), whether the tree was modified, and
// the Go version.
type Build struct {
	Module, Revision, GoVersion string
	Modified                    bool
}

// ReadBuild returns the running binary's build information.
func ReadBuild() Build {
	b := Build{Module: "(devel)", Revision: "unknown"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		b = FromBuildInfo(bi)
	}
	return b
}

// FromBuildInfo extracts a Build from the toolchain's build information.
func FromBuildInfo(bi *debug.BuildInfo) Build {
	b := Build{Module: "(devel)", Revision: "unknown", GoVersion: bi.GoVersion}
	if bi.Main.Version != "" {
		b.Module = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the line `gatehouse version` prints, e.g.
// "gatehouse 0.1.0 revision 4fe131d… (modified) (module (devel), go1.26.8)".
func (b Build) String() string {
	modified := ""
	if b.Modified {
		modified = " (modified)"
	}
	goVersion := ""
	if b.GoVersion != "" {
		goVersion = ", " + b.GoVersion
	}
	return fmt.Sprintf("gatehouse %s revision %s%s (module %s%s)", Release, b.Revision, modified, b.Module, goVersion)
}
