package version

import (
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// The release is a semantic version, and CHANGELOG.md's latest release
// (its first "## [x.y.z] - date" heading) is this one.
func TestReleaseIsTheChangelogsLatest(t *testing.T) {
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(Release) {
		t.Fatalf("Release %q is not MAJOR.MINOR.PATCH", Release)
	}
	b, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("CHANGELOG.md has no release heading \"## [x.y.z] - YYYY-MM-DD\"")
	}
	if m[1] != Release {
		t.Fatalf("CHANGELOG.md's latest release is %s, the code's %s", m[1], Release)
	}
}

func TestBuildString(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := FromBuildInfo(bi).String(), "gatehouse 0.1.0 revision abc123 (modified) (module v0.1.0, go1.26.8)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	got := FromBuildInfo(&debug.BuildInfo{}).String()
	if got != "gatehouse 0.1.0 revision unknown (module (devel))" {
		t.Errorf("without build information: %q", got)
	}
	if !strings.HasPrefix(ReadBuild().String(), "gatehouse "+Release+" revision ") {
		t.Errorf("ReadBuild: %q", ReadBuild().String())
	}
}
