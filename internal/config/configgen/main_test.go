package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/gatehouse/gatehouse/internal/config"
)

// TestGeneratedFilesAreCurrent: docs/CONFIG.md, the JSON Schema and the
// keys' descriptions are what the generator prints from the structs as
// they are; generated() fails when a key has no description.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := generated(root)
	if err != nil {
		t.Fatalf("%v\n(then run `%s`)", err, Regenerate)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale or missing (%v): run `%s` and commit the result", name, err, Regenerate)
		}
	}
}

// TestEveryStructFieldIsAKey: every field with a yaml tag in the
// configuration's structs is a key of Keys with a description (a field the
// walk missed would be undocumented).
func TestEveryStructFieldIsAKey(t *testing.T) {
	root, _ := repoRoot()
	docs, err := readDocs(docDirs(root)...)
	if err != nil {
		t.Fatal(err)
	}
	keys := config.KeysDescribedBy(docs)
	fields := map[string]bool{}
	for _, k := range keys {
		fields[k.Field] = true
		if k.Description == "" || k.Type == "" {
			t.Errorf("%s: description %q, type %q", k.Path, k.Description, k.Type)
		}
	}
	if len(keys) < 190 {
		t.Errorf("only %d keys", len(keys))
	}
	// Every documented field of a configuration struct is reachable.
	for _, prefix := range []string{"settings.", "config.Provider.", "providers.HMAC."} {
		for f := range docs {
			if strings.HasPrefix(f, prefix) && !fields[f] {
				t.Errorf("%s has a doc comment but is no key", f)
			}
		}
	}
}

// TestExampleConfigsMatchTheSchema validates gatehouse.yaml, the
// production example and every YAML block of the documentation that is a
// configuration (its top-level keys are the file's) against the JSON
// Schema, and checks the schema refuses what Parse refuses.
func TestExampleConfigsMatchTheSchema(t *testing.T) {
	root, _ := repoRoot()
	c := jsonschema.NewCompiler()
	b, err := os.ReadFile(filepath.Join(root, "schemas", "gatehouse.config.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("gatehouse.config.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("gatehouse.config.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	validate := func(name string, src []byte) error {
		var v any
		if err := yaml.Unmarshal(src, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		j, err := json.Marshal(v) // YAML's types as JSON's
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		if err != nil {
			t.Fatal(err)
		}
		return schema.Validate(inst)
	}
	// The Helm chart's example values: their config is a configuration.
	examples, _ := filepath.Glob(filepath.Join(root, "deploy", "helm", "gatehouse", "examples", "*.yaml"))
	if len(examples) == 0 {
		t.Fatal("no Helm chart examples")
	}
	for _, f := range examples {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Config yaml.Node `yaml:"config"`
		}
		if err := yaml.Unmarshal(src, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cfg, err := yaml.Marshal(&v.Config)
		if err != nil || v.Config.Kind == 0 {
			t.Fatalf("%s: no config (%v)", f, err)
		}
		if err := validate(f, cfg); err != nil {
			t.Errorf("%s: config: %v", f, err)
		}
	}
	files := []string{"gatehouse.yaml"}
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(src, []byte("# yaml-language-server: $schema=")) && f == "gatehouse.yaml" {
			t.Errorf("%s: no yaml-language-server $schema comment on its first line", f)
		}
		if err := validate(f, src); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if err := validate("gatehouse config defaults", config.DefaultsYAML()); err != nil {
		t.Errorf("gatehouse config defaults: %v", err)
	}
	top := map[string]bool{}
	for _, k := range config.Keys() {
		if !strings.Contains(k.Path, ".") {
			top[k.Path] = true
		}
	}
	block := regexp.MustCompile("(?s)\n```yaml\n(.*?)\n```")
	mds, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	mds = append(mds, filepath.Join(root, "README.md"))
	n := 0
	for _, md := range mds {
		text, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllSubmatch(text, -1) {
			var v map[string]any
			if yaml.Unmarshal(m[1], &v) != nil {
				continue // not a mapping at column 0: a fragment
			}
			isConfig := false
			for k := range v {
				isConfig = isConfig || top[k]
			}
			if !isConfig {
				continue
			}
			n++
			if err := validate(md, m[1]); err != nil {
				t.Errorf("%s: a YAML block does not match the schema: %v\n%s", filepath.Base(md), err, m[1])
			}
		}
	}
	if n < 8 {
		t.Errorf("only %d configuration blocks found in the documentation", n)
	}
	for name, bad := range map[string]string{
		"unknown key":       "listen: x\nno_such_key: 1\n",
		"unknown section":   "storage: {retention: 1h, nope: 2}\n",
		"bad duration":      "storage: {retention: soon}\n",
		"bad enum":          "log_level: loud\n",
		"no secrets":        "providers: {a: {scheme: stripe}}\n",
		"bad field source":  "providers: {a: {scheme: hmac, secrets: [{value: x}], event_id: [{headr: X}]}}\n",
		"bad provider name": "providers: {A!: {scheme: stripe, secrets: [{value: x}]}}\n",
	} {
		if validate(name, []byte(bad)) == nil {
			t.Errorf("%s: the schema accepts %q", name, bad)
		}
	}
}
