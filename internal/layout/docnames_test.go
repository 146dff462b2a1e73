package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goIndex is what the module's Go files declare: by package, by type, and
// every name.
type goIndex struct {
	pkgs    map[string]map[string]bool // package name (and its folder's name) → top-level names
	members map[string]map[string]bool // type name → its methods and fields (every type of that name)
	all     map[string]bool            // every declared name: top level, methods, fields
	// imported are the names the module's files import packages outside
	// the module by (prometheus, kgo): a qualifier among them may name
	// either.
	imported map[string]bool
}

func newGoIndex() *goIndex {
	return &goIndex{pkgs: map[string]map[string]bool{}, members: map[string]map[string]bool{}, all: map[string]bool{},
		imported: map[string]bool{}}
}

func (ix *goIndex) addTop(pkgs []string, name string) {
	for _, p := range pkgs {
		if ix.pkgs[p] == nil {
			ix.pkgs[p] = map[string]bool{}
		}
		ix.pkgs[p][name] = true
	}
	ix.all[name] = true
}

func (ix *goIndex) addMember(typ, name string) {
	if ix.members[typ] == nil {
		ix.members[typ] = map[string]bool{}
	}
	ix.members[typ][name] = true
	ix.all[name] = true
}

// add indexes one parsed file of the folder dir.
func (ix *goIndex) add(dir string, f *ast.File) {
	pkgs := []string{strings.TrimSuffix(f.Name.Name, "_test"), filepath.Base(dir)}
	fields := func(typ string, list *ast.FieldList) {
		if list == nil {
			return
		}
		for _, fl := range list.List {
			for _, n := range fl.Names {
				ix.addMember(typ, n.Name)
			}
			if len(fl.Names) == 0 { // embedded: its type's name is the field's
				t := fl.Type
				if s, ok := t.(*ast.StarExpr); ok {
					t = s.X
				}
				switch e := t.(type) {
				case *ast.Ident:
					ix.addMember(typ, e.Name)
				case *ast.SelectorExpr:
					ix.addMember(typ, e.Sel.Name)
				}
			}
		}
	}
	for _, im := range f.Imports {
		path := strings.Trim(im.Path.Value, `"`)
		if strings.HasPrefix(path, module) {
			continue
		}
		name := filepath.Base(path)
		if im.Name != nil {
			name = im.Name.Name
		}
		ix.imported[name] = true
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				ix.addTop(pkgs, d.Name.Name)
				continue
			}
			t := d.Recv.List[0].Type
			for {
				switch e := t.(type) {
				case *ast.StarExpr:
					t = e.X
					continue
				case *ast.IndexExpr:
					t = e.X
					continue
				case *ast.IndexListExpr:
					t = e.X
					continue
				}
				break
			}
			if id, ok := t.(*ast.Ident); ok {
				ix.addMember(id.Name, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					ix.addTop(pkgs, sp.Name.Name)
					switch t := sp.Type.(type) {
					case *ast.StructType:
						fields(sp.Name.Name, t.Fields)
					case *ast.InterfaceType:
						fields(sp.Name.Name, t.Methods)
					}
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						ix.addTop(pkgs, n.Name)
					}
				}
			}
		}
	}
}

// indexModule parses every Go file of the repository.
func indexModule(t *testing.T, root string) *goIndex {
	t.Helper()
	ix := newGoIndex()
	fset := token.NewFileSet()
	for _, rel := range goFiles(t, root) {
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", rel, err)
		}
		ix.add(filepath.Dir(rel), f)
	}
	return ix
}

// A code span of the documentation is read as a Go name when it has one of
// these shapes (a call's arguments dropped: `ingest.NewWriter(pool, 1, 64)`):
//
//	pkg.Name, pkg.Name.Member   pkg a package of this module (by its name or its folder's;
//	                            unless a package outside it of that name has Name too);
//	                            Name declared in it, Member a method or field of Name
//	Type.member                 Type a type declared in the module; member one of its methods or fields
//	MixedCaps                   an exported name of two humps or more (NewWriter, DefaultTolerance):
//	                            declared somewhere in the module
//
// Not Go, so not read: environment variables and SQL (upper case,
// underscores), configuration keys and metric names (lower case, dots and
// underscores), headers (dashes), paths, a package outside the module
// (http.Error, JSON.parse), and one-hump words (Allow, Secret), which
// are as often English, HTTP or Kubernetes words, and lower-case camel
// names alone (updatedAt, padStart: JSON fields, JavaScript, Helm values;
// an unexported Go name is cited by its type, Receiver.serve). A name of another Go
// module is written qualified (kgo.BlockRebalanceOnPoll); notGo lists the
// names of other vocabularies the documents use.
var (
	qualified   = regexp.MustCompile(`^([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9]*)(?:\.([A-Za-z][A-Za-z0-9]*))?$`)
	typeMember  = regexp.MustCompile(`^([A-Z][A-Za-z0-9]*)\.([A-Za-z][A-Za-z0-9]*)$`)
	mixedCaps   = regexp.MustCompile(`^[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+$`)
	callArgs    = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9.]*)\(.*\)$`)
	docCodeSpan = regexp.MustCompile("`([^`]+)`")
)

// notGo are the names in Go's shapes the documents use that are not Go
// identifiers of the module.
var notGo = map[string]bool{
	"SpamComplaint": true, "SubscriptionChange": true, // Postmark's RecordType values
	"Issue.create":          true,                       // a Linear webhook's type and action
	"RuntimeDefault":        true,                       // Kubernetes' seccomp profile
	"RequestValidator":      true,                       // Twilio's SDK class
	"SimpleHeaderConverter": true, "InsertHeader": true, // Kafka Connect's classes
	"HttpOnly":              true, // a cookie attribute
	"TestVerifyInteraction": true, // discordgo's test, cited for its vector
}

// checkGoName returns what is wrong with a code span read as a Go name; ""
// when nothing is, or when the span is not read as one.
func checkGoName(ix *goIndex, span string) string {
	s := strings.TrimSpace(span)
	if m := callArgs.FindStringSubmatch(s); m != nil {
		s = m[1]
	}
	if notGo[s] {
		return ""
	}
	if m := qualified.FindStringSubmatch(s); m != nil {
		names, ok := ix.pkgs[m[1]]
		switch {
		case !ok, !names[m[2]] && ix.imported[m[1]]:
			return "" // a package outside the module
		case !names[m[2]]:
			return "package " + m[1] + " declares no " + m[2]
		case m[3] != "" && !ix.members[m[2]][m[3]]:
			return m[2] + " has no method or field " + m[3]
		}
		return ""
	}
	if m := typeMember.FindStringSubmatch(s); m != nil {
		if ms, ok := ix.members[m[1]]; ok && !ms[m[2]] {
			return m[1] + " has no method or field " + m[2]
		}
		return ""
	}
	if mixedCaps.MatchString(s) && !strings.HasPrefix(s, "Gatehouse") && !ix.all[s] {
		return "no such name in the module"
	}
	return ""
}

// docNames returns the code spans of a Markdown text, outside fenced
// blocks, with their line numbers.
func docNames(text string) (spans []string, lines []int) {
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
		for _, m := range docCodeSpan.FindAllStringSubmatch(line, -1) {
			spans = append(spans, m[1])
			lines = append(lines, i+1)
		}
	}
	return spans, lines
}

// TestDocsNameGoIdentifiers holds the Go names the documentation cites in
// code spans to the module's declarations (CHANGELOG.md is history: it
// names what was, and is not read).
func TestDocsNameGoIdentifiers(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	ix := indexModule(t, root)
	n := 0
	for _, file := range markdownFiles(t, root) {
		if file == "CHANGELOG.md" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		spans, lines := docNames(string(b))
		for i, s := range spans {
			n++
			if problem := checkGoName(ix, s); problem != "" {
				t.Errorf("%s:%d: `%s`: %s", file, lines[i], s, problem)
			}
		}
	}
	if n < 100 {
		t.Errorf("only %d code spans found in the documentation: is the reader broken?", n)
	}
}

// The name checker itself: what it refuses and what it leaves alone.
func TestGoNameChecker(t *testing.T) {
	src := `package ingest
type Receiver struct{ Writer *Writer }
func (r *Receiver) serve() {}
func NewWriter() *Writer { return nil }
type Writer struct{}
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	ix := newGoIndex()
	ix.add("ingest", f)
	for _, good := range []string{"ingest.NewWriter", "ingest.NewWriter(pool, 1, 64)", "ingest.Receiver.Writer", "Receiver.serve",
		"NewWriter", "http.Error", "JSON.parse", "GOGC", "GATEHOUSE_LISTEN", "storage.retention", "gatehouse_ingest_events_total",
		"Allow", "Retry-After", "updatedAt", "SELECT", "GatehouseRelayOutboxBacklog", "HttpOnly"} {
		if p := checkGoName(ix, good); p != "" {
			t.Errorf("`%s` refused: %s", good, p)
		}
	}
	for _, bad := range []string{"ingest.DefaultTolerance", "ingest.Receiver.handle", "Receiver.handle", "DefaultTolerance",
		"ingest.Presets()"} {
		if checkGoName(ix, bad) == "" {
			t.Errorf("`%s` not refused", bad)
		}
	}
	spans, _ := docNames("`a` and `b`\n```\n`c`\n```\n`d`\n")
	if strings.Join(spans, " ") != "a b d" {
		t.Errorf("docNames = %q", spans)
	}
}
