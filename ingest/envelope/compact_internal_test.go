package envelope

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"
)

var compactCases = []string{
	`{}`, `[]`, `"s"`, `1`, `null`, `true`,
	`{"a":1,"b":[1,2,{"c":"d"}]}`,
	" {\n  \"a\" : 1 ,\t\"b\" :\r\n [ 1 , 2 ] }\n",
	`{"html":"<script>&amp;</script>","k<":">"}`,
	`{"sep":"a` + "\u2028" + `b` + "\u2029" + `c","other":"` + "\u2027\u202a\u00e9\u65e5" + `"}`,
	`{"esc":"quote \" backslash \\ slash \/ tab \t nl \n u \u0041 \u2028 \u003c","after":" x "}`,
	`{"space in string":"  a  b  ","trailing backslash":"\\"}`,
	`[1e10, -0.5, 1E-3, {"": ""}]`,
}

// TestAppendCompactIsEncodingJSONs: appendCompact writes the bytes
// encoding/json writes for the same text as a json.RawMessage.
func TestAppendCompactIsEncodingJSONs(t *testing.T) {
	for _, c := range compactCases {
		checkCompact(t, []byte(c))
	}
}

func FuzzAppendCompact(f *testing.F) {
	for _, c := range compactCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if storable(src) != nil { // appendCompact's input is storable
			return
		}
		checkCompact(t, src)
	})
}

func checkCompact(t *testing.T, src []byte) {
	t.Helper()
	if !gjson.ValidBytes(src) {
		t.Fatalf("case %q is not JSON", src)
	}
	want, err := json.Marshal(json.RawMessage(src))
	if err != nil {
		return // encoding/json refuses what gjson accepts: PostgreSQL decides
	}
	if got := appendCompact([]byte("prefix"), src); !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Errorf("appendCompact(%q) = %q, want %q", src, got[len("prefix"):], want)
	}
}
