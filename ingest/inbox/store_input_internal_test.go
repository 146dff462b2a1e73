package inbox

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// appendJSONString writes what encoding/json reads back as the same
// string, for every byte that PostgreSQL's text accepts.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "evt_1", `a"b\c`, "tab\there\nnew\rret", "\x01\x1f\x7f", "é – 😀", "</script>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got string
		if err := json.Unmarshal(appendJSONString(nil, s), &got); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want, _ := json.Marshal(s) // invalid UTF-8 becomes U+FFFD in both
		var w string
		_ = json.Unmarshal(want, &w)
		if got != w {
			t.Fatalf("%q read back as %q, want %q", s, got, w)
		}
	})
}

// A row's keys are those of inputColumns, and its times are truncated to
// the microsecond, infinite or absent as pgx's binary encoding sends them.
func TestInputRowWritesEveryKind(t *testing.T) {
	at := time.Date(2026, 12, 7, 18, 0, 0, 123456789, time.FixedZone("x", 3600))
	w := inputRow{b: []byte{'{'}}
	w.str("p", "ref")
	w.raw("d", []byte(`{"a":1}`))
	w.time("c", pgtype.Timestamptz{Time: at, Valid: true})
	w.time("u1", pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true})
	w.time("v1", pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true})
	w.time("f", pgtype.Timestamptz{})
	w.text("r", pgtype.Text{})
	w.bytes("g", []byte{0, 0xff})
	w.bytes("g2", nil)
	w.num("l", 691200)
	w.int("n", 3)
	w.b = append(w.b, '}')
	want := `{"p":"ref","d":{"a":1},"c":"2026-12-07T17:00:00.123456Z","u1":"infinity","v1":"-infinity","g":"\\x00ff","l":691200,"n":3}`
	if string(w.b) != want {
		t.Fatalf("row %s\nwant %s", w.b, want)
	}
}
