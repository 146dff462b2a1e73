package layout

import (
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The documentation cited by Go code: a comment or a string (a metric's
// Help text, a generated page's preamble) that names a document of the
// repository, a heading of it, or a README section must name one that
// exists. Forms read (in comments and string literals only):
//
//	docs/STORAGE.md, SPEC.md, ../../docs/AUTH.md   the file must exist
//	docs/SECURITY.md#erasure                       …and have that heading anchor
//	docs/RECEIVER.md "Under overload"              …and a heading beginning with that title
//	docs/BENCHMARKS.md, "Webhook receiver"         (the same, after a comma)
//	README "Retention"                             README.md's heading of that title
//
// A document is named by an upper-case file name (README.md, SPEC.md…); a
// bare name is looked for beside the Go file, in docs/ and at the root; a
// path with ../ is read from the Go file's directory, any other from the
// root. A lower-case name (vectors-b.md) is not the repository's document.

// docRef matches a reference; groups: 1 the path (with its .md), 2 a bare
// README, 3 the #anchor, 4 the quoted title.
var docRef = regexp.MustCompile(`((?:\.\./)*(?:[a-z][a-z0-9_-]*/)*[A-Z][A-Z0-9_]*\.md)|\b(README)\b(?:[^.]|$)`)

// docRefTail reads what follows a reference: #anchor, or an optional comma
// and a quoted title.
var docRefTail = regexp.MustCompile(`^(?:#([A-Za-z0-9_-]+)|,?\s+(?://\s*)?["“]([^"”]+)["”])`)

// docReference is one reference found in Go source.
type docReference struct {
	line          int
	path          string // as written; "README" for a bare README
	anchor, title string
}

func (r docReference) String() string {
	s := r.path
	if r.anchor != "" {
		s += "#" + r.anchor
	}
	if r.title != "" {
		s += " " + strconv.Quote(r.title)
	}
	return s
}

// goDocRefs returns the references in the comments and string literals of
// a Go source.
func goDocRefs(src []byte) []docReference {
	var out []docReference
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, scanner.ScanComments)
	// The texts: string literals, and runs of line comments on
	// consecutive lines joined (a title may follow on the next line).
	type text struct {
		line int
		lit  string
	}
	var texts []text
	last := -1
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		line := fset.Position(pos).Line
		switch {
		case tok == token.COMMENT && line == last+1 && len(texts) > 0:
			texts[len(texts)-1].lit += "\n" + lit
		case tok == token.COMMENT:
			texts = append(texts, text{line, lit})
		case tok == token.STRING:
			if u, err := strconv.Unquote(lit); err == nil && strings.HasPrefix(lit, `"`) {
				lit = u
			}
			texts = append(texts, text{line, lit})
			line = -2
		default:
			line = -2
		}
		last = line
	}
	for _, tx := range texts {
		lit := tx.lit
		base := tx.line
		for _, m := range docRef.FindAllStringSubmatchIndex(lit, -1) {
			r := docReference{line: base + strings.Count(lit[:m[0]], "\n")}
			end := m[1]
			if m[2] >= 0 {
				r.path = lit[m[2]:m[3]]
				end = m[3]
			} else {
				r.path = "README"
				end = m[5]
			}
			if t := docRefTail.FindStringSubmatch(lit[end:]); t != nil {
				r.anchor = t[1]
				r.title = strings.Join(strings.Fields(strings.ReplaceAll(t[2], "//", " ")), " ")
			}
			if r.path == "README" && r.title == "" {
				continue // the word, not a section of it
			}
			out = append(out, r)
		}
	}
	return out
}

// resolveDoc finds the document a reference in the Go file goFile (both
// relative to root) names; "" when there is none.
func resolveDoc(root, goFile, path string) string {
	var tries []string
	switch {
	case path == "README":
		tries = []string{"README.md"}
	case strings.HasPrefix(path, "../"):
		tries = []string{filepath.Join(filepath.Dir(goFile), path)}
	case strings.Contains(path, "/"):
		tries = []string{path}
	default:
		tries = []string{filepath.Join(filepath.Dir(goFile), path), filepath.Join("docs", path), path}
	}
	for _, rel := range tries {
		rel = filepath.Clean(rel)
		if rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		if st, err := os.Stat(filepath.Join(root, rel)); err == nil && !st.IsDir() {
			return rel
		}
	}
	return ""
}

// titleAnchor is the anchor GitHub gives a heading of this title.
func titleAnchor(title string) string {
	for a := range anchors("# " + title) {
		return a
	}
	return ""
}

// checkDocRef returns what is wrong with a reference ("" when nothing).
func checkDocRef(root, goFile string, r docReference, read func(string) (string, bool)) string {
	rel := resolveDoc(root, goFile, r.path)
	if rel == "" {
		return "no such document in the repository"
	}
	if r.anchor == "" && r.title == "" {
		return ""
	}
	text, _ := read(rel)
	heads := anchors(text)
	if r.title == "" {
		if !heads[strings.ToLower(r.anchor)] {
			return rel + " has no such heading"
		}
		return ""
	}
	// A title names the heading it begins ("Without Helm" for "Without
	// Helm: `kubectl apply -k deploy/k8s`").
	want := titleAnchor(r.title)
	for a := range heads {
		if want != "" && strings.HasPrefix(a, want) {
			return ""
		}
	}
	return rel + " has no heading beginning with this title"
}

// goFiles lists the repository's Go files, relative to root.
func goFiles(t *testing.T, root string) []string { return repoFiles(t, root, ".go") }

// TestGoDocReferencesResolve holds every reference to a document from a
// Go comment or string to the repository's documents and their headings
// (this package's own files are skipped: their strings are the checkers'
// bad examples).
func TestGoDocReferencesResolve(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
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
	n := 0
	for _, f := range goFiles(t, root) {
		if filepath.Dir(f) == "internal/layout" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range goDocRefs(src) {
			n++
			problem := checkDocRef(root, f, r, read)
			if problem == "" {
				continue
			}
			t.Errorf("%s:%d: %s: %s", f, r.line, r, problem)
		}
	}
	if n < 20 {
		t.Errorf("only %d references to documents found in Go files: is the pattern broken?", n)
	}
}

// The reference checker itself: what it finds, accepts and refuses.
func TestGoDocReferenceChecker(t *testing.T) {
	root := t.TempDir()
	for name, text := range map[string]string{
		"README.md":    "# R\n## Good section\n",
		"docs/GOOD.md": "# Good\n## Yes: and more\n",
	} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := []byte(`package x

// See docs/GOOD.md#yes-and-more, README "Good section", GOOD.md "Yes",
// the README and /work/research/vectors-b.md; broken: docs/GOOD.md "No
// such", BAD.md and README "Retention".
var help = "the table (docs/GOOD.md#nope)"
`)
	read := func(rel string) (string, bool) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		return string(b), err == nil
	}
	var good, bad []string
	for _, r := range goDocRefs(src) {
		if checkDocRef(root, "x/x.go", r, read) == "" {
			good = append(good, r.String())
		} else {
			bad = append(bad, r.String())
		}
	}
	if g := strings.Join(good, " | "); g != `docs/GOOD.md#yes-and-more | README "Good section" | GOOD.md "Yes"` {
		t.Errorf("accepted: %s", g)
	}
	if b := strings.Join(bad, " | "); b != `docs/GOOD.md "No such" | BAD.md | README "Retention" | docs/GOOD.md#nope` {
		t.Errorf("refused: %s", b)
	}
}
