package inbox

import (
	"encoding/hex"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// The Writer's statement takes its rows as one jsonb parameter, an array
// of objects read by jsonb_to_recordset (insertSQL's input), not as one
// array parameter per column: PostgreSQL parsed and bound 21 arrays and
// unnested them in about 70–110 µs of CPU a statement, whatever its
// rows, against about 35 µs for one jsonb value carrying the same rows
// (docs/BENCHMARKS.md, "Known limits"), and a statement carries only
// 2 rows at 4 connections. The keys are one or two letters, inputColumns
// names them; a null or absent key is SQL NULL.

// inputColumns is the record definition of insertSQL's input: each row's
// key in the jsonb parameter and its SQL type, in the order of the
// columns input names.
const inputColumns = `p text, e text, t text, d jsonb, c timestamptz, s text, o uuid, a text, k text, n int, m text, l float8,
      r text, f timestamptz, u1 timestamptz, v1 timestamptz, u2 timestamptz, v2 timestamptz, g bytea, x float8, y text`

// inputRow appends one row of insertSQL's jsonb input to dst.
type inputRow struct{ b []byte }

func (w *inputRow) key(k string) {
	if n := len(w.b); n > 0 && w.b[n-1] != '{' {
		w.b = append(w.b, ',')
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

func (w *inputRow) str(k, v string) {
	w.key(k)
	w.b = appendJSONString(w.b, v)
}

// text is a nullable string: absent when not valid.
func (w *inputRow) text(k string, v pgtype.Text) {
	if v.Valid {
		w.str(k, v.String)
	}
}

func (w *inputRow) raw(k string, v []byte) {
	w.key(k)
	w.b = append(w.b, v...)
}

func (w *inputRow) num(k string, v float64) {
	w.key(k)
	w.b = strconv.AppendFloat(w.b, v, 'g', -1, 64)
}

func (w *inputRow) int(k string, v int) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, int64(v), 10)
}

// time is a timestamptz, to the microsecond as pgx's binary encoding
// sends it (truncated); absent when not valid.
func (w *inputRow) time(k string, v pgtype.Timestamptz) {
	if !v.Valid {
		return
	}
	w.key(k)
	switch v.InfinityModifier {
	case pgtype.Infinity:
		w.b = append(w.b, `"infinity"`...)
	case pgtype.NegativeInfinity:
		w.b = append(w.b, `"-infinity"`...)
	default:
		w.b = append(w.b, '"')
		w.b = v.Time.Truncate(time.Microsecond).UTC().AppendFormat(w.b, "2006-01-02T15:04:05.999999Z07:00")
		w.b = append(w.b, '"')
	}
}

// bytes is a bytea in PostgreSQL's hex input form; absent when nil.
func (w *inputRow) bytes(k string, v []byte) {
	if v == nil {
		return
	}
	w.key(k)
	w.b = append(w.b, `"\\x`...)
	w.b = hex.AppendEncode(w.b, v)
	w.b = append(w.b, '"')
}

// appendJSONString appends s as a JSON string: the quote, the backslash
// and control characters escaped, every other byte as it is. A string
// that is not UTF-8 (or holds NUL) is refused by PostgreSQL's jsonb input,
// the whole statement with it, as its text input refused it.
func appendJSONString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
