package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestBuildScriptKeepsStatementAndBindsEveryParameter(t *testing.T) {
	out := uuid.New().String()
	rows := `[{"p":"bench","e":"` + captureEventID + `","d":{"id":"1","q":"a\"b\\c"},"o":"` + out + `","n":0}]`
	stmt := "SELECT * FROM jsonb_to_recordset($1::jsonb) AS j(p text), make_interval(secs => $2::float8)"
	s, err := buildScript(t.TempDir(), stmt, []any{[]byte(rows), 691200.0})
	if err != nil {
		t.Fatal(err)
	}
	want := "SELECT * FROM jsonb_to_recordset((:p1a || :eid::text || :p1b || lpad(to_hex(:eid::bigint), 32, '0')::uuid::text || :p1c)::jsonb) " +
		"AS j(p text), make_interval(secs => :p2::float8);"
	if !strings.Contains(s.text, want) {
		t.Fatalf("script:\n%s\nwant statement:\n%s", s.text, want)
	}
	if !strings.HasPrefix(s.text, "\\set n :n + 1\n\\set eid ") {
		t.Fatalf("script does not start with the per-client counter:\n%s", s.text)
	}
	onDisk, err := os.ReadFile(s.path)
	if err != nil || string(onDisk) != s.text {
		t.Fatalf("script file: %v, %q", err, onDisk)
	}
	defs := strings.Join(s.defs, "\n")
	for _, d := range []string{"n=0", `p1a=[{"p":"bench","e":"`, `p1b=","d":{"id":"1","q":"a\"b\\c"},"o":"`, `p1c=","n":0}]`, "p2=691200"} {
		if !strings.Contains(defs, d) {
			t.Errorf("missing -D %s in\n%s", d, defs)
		}
	}
}

func TestBuildScriptRejectsUnknownParameters(t *testing.T) {
	for name, args := range map[string][]any{
		"unsupported type": {[]byte(`[{"e":"` + captureEventID + `","o":"` + uuid.New().String() + `"}]`), []bool{true}},
		"no event id":      {[]byte(`[{"e":"a","o":"` + uuid.New().String() + `"}]`)},
		"no outbox id":     {[]byte(`[{"e":"` + captureEventID + `"}]`)},
	} {
		if _, err := buildScript(t.TempDir(), "SELECT $1, $2, $3", args); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := buildScript(t.TempDir(), "SELECT $1, $2, $3", []any{[]byte(`[{"e":"` + captureEventID + `","o":"` + uuid.New().String() + `"}]`), 1.0}); err == nil {
		t.Error("statement referencing a parameter beyond the arguments: no error")
	}
}
