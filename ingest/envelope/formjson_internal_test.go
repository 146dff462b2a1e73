package envelope

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"testing"
	"time"
)

// formJSONByMarshal is what formJSON's bytes must equal: json.Marshal of
// the fields (a map sorts its keys; a repeated field an array).
func formJSONByMarshal(t testing.TB, body []byte) []byte {
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		t.Fatal(err)
	}
	obj := make(map[string]any, len(vals))
	for k, vs := range vals {
		if len(vs) == 1 {
			obj[k] = vs[0]
		} else {
			obj[k] = vs
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// awkwardStrings are texts whose JSON encoding has a special case: every
// byte value alone, HTML characters, line and paragraph separators,
// invalid UTF-8, quotes and backslashes, multi-byte runes.
func awkwardStrings() []string {
	out := []string{"", "plain", "<script>&amp;</script>", "\u2028\u2029", "\xff\xfe", "a\xc3", "\"quoted\\", "é漢字🙂", "\x7f\x00\b\f\n\r\t"}
	for b := range 256 {
		out = append(out, string([]byte{byte(b)}), "x"+string([]byte{byte(b)})+"y")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		out = append(out, string(b))
	}
	return out
}

// TestFormJSONIsWhatJSONMarshalGives: formJSON (and wrap over its output)
// writes the bytes encoding/json wrote before it was hand-built, for every
// awkward name and value, alone and repeated.
func TestFormJSONIsWhatJSONMarshalGives(t *testing.T) {
	strs := awkwardStrings()
	at := receivedAt(time.Unix(1_700_000_000, 0))
	for i, s := range strs {
		v := url.Values{}
		v.Add("k"+s, s)
		v.Add(s, "v")
		v.Add("rep", s)
		v.Add("rep", strs[(i+1)%len(strs)])
		body := []byte(v.Encode())
		got, err := formJSON(body, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := formJSONByMarshal(t, body); !bytes.Equal(got, want) {
			t.Fatalf("formJSON(%q)\n got %s\nwant %s", body, got, want)
		}
		checkParsedForm(t, body, got)
		fast, err := wrap("id"+s, "type"+s, at, got, true)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := wrap("id"+s, "type"+s, at, got, false)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fast.Payload, slow.Payload) {
			t.Fatalf("wrap of a form (%q)\n got %s\nwant %s", s, fast.Payload, slow.Payload)
		}
	}
}

// FuzzFormJSON: go test -fuzz FuzzFormJSON ./ingest
func FuzzFormJSON(f *testing.F) {
	f.Add([]byte("a=1&b=%3Cx%3E&a=2&c=%E2%80%A8"))
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := url.ParseQuery(string(body)); err != nil {
			return
		}
		got, err := formJSON(body, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := formJSONByMarshal(t, body); !bytes.Equal(got, want) {
			t.Fatalf("formJSON(%q)\n got %s\nwant %s", body, got, want)
		}
		checkParsedForm(t, body, got)
	})
}

// checkParsedForm: formJSON of the parameters a verifier parsed (Twilio's,
// signature.Result.Form) writes what formJSON of the body does.
func checkParsedForm(t *testing.T, body, want []byte) {
	t.Helper()
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		t.Fatal(err)
	}
	got, err := formJSON(body, vals)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("formJSON(%q) of the parsed form\n got %s\nwant %s", body, got, want)
	}
}
