package config

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func noEnv(string) string { return "" }

// TestStatedDefaultsAreParses: for every key with a stated default,
// writing the default into the file changes nothing Parse returns, and
// the value Parse applies when the key is absent is the stated one (read
// back from the parsed configuration by the key's path).
func TestStatedDefaultsAreParses(t *testing.T) {
	base, err := Parse([]byte(minimal), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range Keys() {
		if k.Default == "" {
			continue
		}
		n++
		if got := effective(t, base, k); got != k.Default {
			t.Errorf("%s: Parse applies %s, the schema states %s", k.Path, got, k.Default)
		}
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(minimal), &doc); err != nil {
			t.Fatal(err)
		}
		var def any
		if err := yaml.Unmarshal([]byte(k.Default), &def); err != nil {
			t.Fatalf("%s: default %q is not YAML: %v", k.Path, k.Default, err)
		}
		set(doc, strings.Split(k.Path, "."), def)
		raw, _ := yaml.Marshal(doc)
		got, err := Parse(raw, noEnv)
		if err != nil {
			t.Errorf("%s: %s set explicitly: %v", k.Path, k.Default, err)
			continue
		}
		if !reflect.DeepEqual(got, base) {
			t.Errorf("%s: setting the stated default %s changes the parsed configuration", k.Path, k.Default)
		}
	}
	if n < 60 {
		t.Errorf("only %d keys state a default", n)
	}
}

// effective is the value at k.Path in cfg as YAML text (the first element
// of a list, the example provider of the map).
func effective(t *testing.T, cfg *Config, k Key) string {
	v := reflect.ValueOf(cfg).Elem()
	for _, seg := range strings.Split(k.Path, ".") {
		if seg == "<name>" {
			v = v.MapIndex(v.MapKeys()[0]).Elem()
			continue
		}
		list := strings.HasSuffix(seg, "[]")
		seg = strings.TrimSuffix(seg, "[]")
		v = fieldByTag(v, seg)
		if !v.IsValid() {
			t.Fatalf("%s: no field %s", k.Path, seg)
		}
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if list {
			v = v.Index(0)
		}
	}
	return yamlText(v)
}

func fieldByTag(v reflect.Value, name string) reflect.Value {
	for i := range v.NumField() {
		if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); tag == name {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

func set(doc map[string]any, path []string, v any) {
	seg := path[0]
	if len(path) == 1 {
		doc[seg] = v
		return
	}
	if seg == "<name>" {
		seg = "example"
	}
	list := strings.HasSuffix(seg, "[]")
	seg = strings.TrimSuffix(seg, "[]")
	next, _ := doc[seg].(map[string]any)
	if list {
		next = doc[seg].([]any)[0].(map[string]any)
	}
	if next == nil {
		next = map[string]any{}
		doc[seg] = next
	}
	set(next, path[1:], v)
}

// TestDefaultsFileParses: `gatehouse config defaults`' file parses to
// what an empty file gives, names every key and describes each.
func TestDefaultsFileParses(t *testing.T) {
	out := DefaultsYAML()
	got, err := Parse(out, noEnv)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want, err := Parse(nil, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the defaults file parses to another configuration than an empty file:\n%+v\n%+v", got, want)
	}
	for _, k := range Keys() {
		_, name := splitPath(k.Path)
		if !strings.Contains(string(out), name+":") || !strings.Contains(string(out), k.Description) {
			t.Errorf("%s: missing from the defaults file", k.Path)
		}
	}
}

// TestEnvOverrides: the keys' Env are exactly the overrides Parse applies.
func TestEnvOverrides(t *testing.T) {
	seen := 0
	for _, k := range Keys() {
		if k.Env == "" {
			continue
		}
		seen++
		value := "https://env.example.com/" + strings.ToLower(k.Env)
		switch k.Env {
		case "GATEHOUSE_LOG_LEVEL":
			value = "debug"
		case "GATEHOUSE_AUTH_ENCRYPTION_KEY":
			value = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
		}
		getenv := func(name string) string {
			if name == k.Env {
				return value
			}
			return ""
		}
		cfg, err := Parse(nil, getenv)
		if err != nil {
			// a key that must come with others (auth.client_id without an issuer) still decodes
			cfg = &Config{}
			cfg.applyEnv(getenv)
		}
		got := effectiveText(cfg, k.Path)
		if !strings.Contains(got, value) && !(k.Env == "GATEHOUSE_AUTH_ENCRYPTION_KEY" && strings.Contains(got, "env")) {
			t.Errorf("%s does not set %s (got %s)", k.Env, k.Path, got)
		}
	}
	if seen != 15 {
		t.Errorf("%d environment overrides, docs/CONFIGURING.md says fifteen", seen)
	}
}

func effectiveText(cfg *Config, path string) string {
	v := reflect.ValueOf(cfg).Elem()
	for _, seg := range strings.Split(path, ".") {
		v = fieldByTag(v, seg)
	}
	out, _ := yaml.Marshal(v.Interface())
	return string(out)
}
