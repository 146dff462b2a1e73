package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

func TestBuildScriptKeepsStatementAndBindsEveryParameter(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	stmt := "SELECT $1::text[], $2::text[], $3::jsonb[], $4::timestamptz[], $5::uuid[], $10::int[], $6::text[], $7::text[], $8::text[], $9::text[]"
	args := []any{
		[]string{"bench"}, []string{captureEventID}, []string{`{"id":"1","q":"a\"b\\c"}`}, []pgtype.Timestamptz{{Time: created, Valid: true}},
		[]pgtype.UUID{{Bytes: uuid.New(), Valid: true}}, []string{"x"}, []string{"y"}, []string{"z"}, []string{"w"}, []int32{0},
	}
	s, err := buildScript(t.TempDir(), stmt, args)
	if err != nil {
		t.Fatal(err)
	}
	want := "SELECT :p1::text[], ARRAY[:eid]::text[], :p3::jsonb[], :p4::timestamptz[], " +
		"ARRAY[lpad(to_hex(:eid::bigint), 32, '0')::uuid]::uuid[], :p10::int[], :p6::text[], :p7::text[], :p8::text[], :p9::text[];"
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
	for _, d := range []string{"n=0", "p1={\"bench\"}", `p3={"{\"id\":\"1\",\"q\":\"a\\\"b\\\\c\"}"}`, "p4={\"2026-01-02T03:04:05Z\"}", "p10={0}"} {
		if !strings.Contains(defs, d) {
			t.Errorf("missing -D %s in\n%s", d, defs)
		}
	}
}

func TestBuildScriptRejectsUnknownParameters(t *testing.T) {
	for name, args := range map[string][]any{
		"unsupported type": {[]string{captureEventID}, []pgtype.UUID{{Bytes: uuid.New(), Valid: true}}, []bool{true}},
		"no event id":      {[]string{"a"}, []pgtype.UUID{{Bytes: uuid.New(), Valid: true}}},
		"no outbox id":     {[]string{captureEventID}},
	} {
		if _, err := buildScript(t.TempDir(), "SELECT $1, $2, $3", args); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := buildScript(t.TempDir(), "SELECT $1, $2, $3", []any{[]string{captureEventID}, []pgtype.UUID{{Bytes: uuid.New(), Valid: true}}}); err == nil {
		t.Error("statement referencing a parameter beyond the arguments: no error")
	}
}
