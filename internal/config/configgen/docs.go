package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// readDocs reads the doc comment of every field of the structs in dirs
// ("settings.Ingest.MaxInFlight" → its first sentence, the struct's Go
// field names written as their YAML keys). A field without a comment of
// its own takes the one before it when that comment names it ("Slot and
// Publication name …").
func readDocs(dirs ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, dir := range dirs {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, "_gen.go") {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil {
				return nil, err
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ParseComments)
			if err != nil {
				return nil, fmt.Errorf("parse %s: %w", name, err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				if st, ok := ts.Type.(*ast.StructType); ok {
					structDocs(f.Name.Name+"."+ts.Name.Name, st, out)
				}
				return false
			})
		}
	}
	return out, nil
}

func structDocs(prefix string, st *ast.StructType, out map[string]string) {
	yamlName := map[string]string{}
	for _, fld := range st.Fields.List {
		if fld.Tag == nil {
			continue
		}
		tag, _ := strconv.Unquote(fld.Tag.Value)
		y, _, _ := strings.Cut(reflect.StructTag(tag).Get("yaml"), ",")
		for _, n := range fld.Names {
			if y != "" && y != "-" {
				yamlName[n.Name] = y
			}
		}
	}
	prev, owner := "", ""
	for _, fld := range st.Fields.List {
		doc := strings.TrimSpace(fld.Doc.Text())
		if doc == "" {
			doc = strings.TrimSpace(fld.Comment.Text())
		}
		for _, n := range fld.Names {
			d, self := doc, n.Name
			if d == "" && regexp.MustCompile(`\b`+n.Name+`\b`).MatchString(prev) {
				d, self = prev, owner
			}
			if d != "" && yamlName[n.Name] != "" {
				out[prefix+"."+n.Name] = oneLine(d, self, yamlName)
			}
		}
		if doc != "" && len(fld.Names) > 0 {
			prev, owner = doc, fld.Names[0].Name
		}
	}
}

var camel = regexp.MustCompile(`[a-z][A-Z]`)

var word = regexp.MustCompile(`[A-Za-z0-9_]+`)

// oneLine is the first sentence of doc, with the struct's Go field names
// written as their YAML keys: those of the sentence's subject ("Slot and
// Publication name …"), and the CamelCase names of the other fields
// further on (a plain word such as API or Kafka is left as it is, and so
// is the described field's own name: "UserInfo calls the OP's UserInfo
// endpoint").
func oneLine(doc, self string, yamlName map[string]string) string {
	s := strings.Join(strings.Fields(doc), " ")
	end := len(s)
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '.' || s[i+1] != ' ' {
			continue
		}
		before := s[:i]
		if strings.HasSuffix(before, "e.g") || strings.HasSuffix(before, "i.e") || strings.HasSuffix(before, "etc") {
			continue
		}
		if open := strings.Count(before, "(") - strings.Count(before, ")"); open > 0 {
			continue
		}
		end = i + 1
		break
	}
	s = s[:end]
	subject := true
	return word.ReplaceAllStringFunc(s, func(w string) string {
		y, ok := yamlName[w]
		switch {
		case subject && ok:
			return "`" + y + "`"
		case subject && (w == "and" || w == "or"):
			return w
		}
		subject = false
		if ok && w != self && camel.MatchString(w) {
			return "`" + y + "`"
		}
		return w
	})
}
