package layout

import (
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository's top directory, seen from this package.
const repoRoot = "../.."

// skipDirs are never walked: not the repository's own documents.
var skipDirs = map[string]bool{".git": true, "node_modules": true, ".data": true, "bin": true}

// mdLink matches an inline Markdown link or image, [text](target) or
// [text](target "title"); the target is group 1.
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)`)

// markdownFiles lists every *.md of the repository, relative to root.
func markdownFiles(t *testing.T, root string) []string { return repoFiles(t, root, ".md") }

// repoFiles lists the repository's files whose names end in ext,
// relative to root, leaving out skipDirs and, for Go files, testdata.
func repoFiles(t *testing.T, root, ext string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (skipDirs[d.Name()] || ext == ".go" && d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ext) {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// links returns the targets of the inline links of a Markdown text with
// their line numbers, outside fenced code blocks and code spans.
func links(text string) (targets []string, lines []int) {
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(stripCodeSpans(line), -1) {
			targets = append(targets, m[1])
			lines = append(lines, i+1)
		}
	}
	return targets, lines
}

var codeSpan = regexp.MustCompile("`+[^`]*`+")

func stripCodeSpans(line string) string { return codeSpan.ReplaceAllString(line, "``") }

// anchors returns the GitHub anchors of a Markdown text's headings: lower
// case, punctuation but '-' and '_' removed, spaces as '-', and "-1",
// "-2"… for repeats.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// TestMarkdownLinksResolve holds every relative link of every Markdown
// file of the repository to a file or directory inside the repository,
// and a link's #anchor into a Markdown file to one of its headings. A
// link out of the repository (../shared/…) is broken in every clone.
func TestMarkdownLinksResolve(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	files := markdownFiles(t, root)
	if len(files) == 0 {
		t.Fatal("no Markdown file found")
	}
	texts := map[string]string{}
	read := func(rel string) (string, bool) {
		if s, ok := texts[rel]; ok {
			return s, true
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return "", false
		}
		texts[rel] = string(b)
		return string(b), true
	}
	for _, file := range files {
		text, _ := read(file)
		targets, lines := links(text)
		for i, target := range targets {
			where := file + ":" + strconv.Itoa(lines[i])
			if u, err := url.Parse(target); err == nil && (u.Scheme != "" || strings.HasPrefix(target, "//")) {
				continue // http(s), mailto: not this test's business
			}
			path, anchor, _ := strings.Cut(target, "#")
			path, err := url.PathUnescape(path)
			if err != nil {
				t.Errorf("%s: link %q: %v", where, target, err)
				continue
			}
			rel := file
			if path != "" {
				if strings.HasPrefix(path, "/") {
					rel = filepath.Clean(strings.TrimPrefix(path, "/"))
				} else {
					rel = filepath.Clean(filepath.Join(filepath.Dir(file), path))
				}
				if rel == ".." || strings.HasPrefix(rel, "../") {
					t.Errorf("%s: link %q leaves the repository", where, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
					t.Errorf("%s: link %q: no such file in the repository (%s)", where, target, rel)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(rel, ".md") {
				continue
			}
			dest, _ := read(rel)
			if !anchors(dest)[strings.ToLower(anchor)] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", where, target, rel, anchor)
			}
		}
	}
}

// The checker itself: what it accepts and refuses.
func TestLinkChecker(t *testing.T) {
	text := "# A title\n## Sign-in and sessions\n## A title\n```\n[no](../shared/X.md)\n```\n" +
		"See [spec](../shared/SPEC.md), `[code](nope.md)` and [b](docs/B.md#sign-in-and-sessions \"t\").\n"
	targets, _ := links(text)
	if strings.Join(targets, " ") != "../shared/SPEC.md docs/B.md#sign-in-and-sessions" {
		t.Errorf("links = %q", targets)
	}
	a := anchors(text)
	for _, want := range []string{"a-title", "a-title-1", "sign-in-and-sessions"} {
		if !a[want] {
			t.Errorf("anchor %q missing from %v", want, a)
		}
	}
}

// TestArchitectureListsEveryPackage holds the layout table of
// docs/ARCHITECTURE.md to `go list ./...`: one row per package of the
// module, and no row for a package that does not exist.
func TestArchitectureListsEveryPackage(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}`, "./...")
	cmd.Dir = root
	list, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs/ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n## Layout\n")
	if start < 0 {
		t.Fatal("docs/ARCHITECTURE.md has no \"## Layout\" section")
	}
	section := text[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if m := regexp.MustCompile("^\\| `([a-z0-9/_-]+)` \\|").FindStringSubmatch(line); m != nil {
			rows[m[1]] = true
		}
	}
	pkgs := map[string]bool{}
	for _, p := range strings.Fields(string(list)) {
		rel := strings.TrimPrefix(p, module)
		if p == strings.TrimSuffix(module, "/") {
			rel = "."
		}
		pkgs[rel] = true
		if !rows[rel] {
			t.Errorf("docs/ARCHITECTURE.md's layout has no row for package %s", rel)
		}
	}
	for r := range rows {
		if !pkgs[r] {
			t.Errorf("docs/ARCHITECTURE.md's layout lists %s, which is not a package of the module", r)
		}
	}
}
