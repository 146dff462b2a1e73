package schemas

import (
	"testing"
	"time"
)

// TestEventTimeKeepsTheProvidersText: RFC 3339 text is kept byte for byte
// (nanoseconds, offsets, trailing zeros); Unix times become RFC 3339 in UTC
// with exactly the digits given, converted as text (a float would turn
// Mailgun's .908181 into .908180999…).
func TestEventTimeKeepsTheProvidersText(t *testing.T) {
	for in, want := range map[string]string{
		"2026-11-20T10:15:41.314187999Z":    "2026-11-20T10:15:41.314187999Z",
		"2026-11-20T10:15:41Z":              "2026-11-20T10:15:41Z",
		"2026-11-20T10:15:41.100Z":          "2026-11-20T10:15:41.100Z",
		"2014-08-01T13:28:10.2735393-04:00": "2014-08-01T13:28:10.2735393-04:00",
		"2026-11-20T10:15:41.5+02:00":       "2026-11-20T10:15:41.5+02:00",
		"1700000000":                        "2023-11-14T22:13:20Z",
		"1521472262.908181":                 "2018-03-19T15:11:02.908181Z",
		"1521472262.9081810":                "2018-03-19T15:11:02.9081810Z",
		"1626230691572":                     "2021-07-14T02:44:51.572Z",
		"1626230691002":                     "2021-07-14T02:44:51.002Z",
		"1626230691000":                     "2021-07-14T02:44:51.000Z",
		"":                                  "",
		"0":                                 "",
		"-5":                                "",
		"1e9":                               "",
		"1.2.3":                             "",
		"1700000000.":                       "",
		"2019-04-15 10:39:56 UTC":           "",
		"2026-11-20T10:15:41,5Z":            "",
		"2026-13-20T10:15:41Z":              "",
		"2026-11-20T10:15:41.314187999":     "",
		"100000000000000000000000":          "",
		"2026-11-20T10:15:41.Z":             "",
		"2026-11-20T10:15:41+0200":          "",
		"2026-11-20T10:15:41z":              "",
		"2026-11-20t10:15:41Z":              "",
		"2026-11-20T10:15:41Z ":             "",
		"2026-11-20T10:15:41-00:30":         "2026-11-20T10:15:41-00:30",
		"2026-11-20T10:15:41+24:00":         "",
		"2026-11-20T10:15:41+05:60":         "",
		"2026-11-20T10:15:41+23:59":         "2026-11-20T10:15:41+23:59",
		"2026-02-30T00:00:00Z":              "",
	} {
		got, at, ok := EventTime(in)
		if got != want || ok != (want != "") {
			t.Errorf("EventTime(%q) = %q, %v; want %q", in, got, ok, want)
			continue
		}
		if !ok {
			continue
		}
		// The text and the instant agree (to the nanosecond Go can hold).
		back, err := time.Parse(time.RFC3339Nano, got)
		if err != nil || !back.Equal(at) {
			t.Errorf("EventTime(%q): text %q reads as %v, instant %v (%v)", in, got, back, at, err)
		}
	}
}

func TestEnvelopeTime(t *testing.T) {
	for payload, want := range map[string]string{
		`{"created_at":"2026-01-02T03:04:05.123456789Z"}`:                           "2026-01-02T03:04:05.123456789Z",
		`{"created_at":1700000000}`:                                                 "2023-11-14T22:13:20Z",
		`{"created":1700000000}`:                                                    "2023-11-14T22:13:20Z",
		`{"timestamp":"2022-11-03T20:26:10.344522Z"}`:                               "2022-11-03T20:26:10.344522Z",
		`{"created_at":"x","created":1700000000}`:                                   "2023-11-14T22:13:20Z",
		`{"created_at":"2026-01-02T03:04:05Z","created_at":"2027-01-02T03:04:05Z"}`: "2027-01-02T03:04:05Z",
		`{"timestamp":"x"}`:                                                         "",
		`{}`:                                                                        "",
		`[`:                                                                         "",
		`[1]`:                                                                       "",
	} {
		got, ok := EnvelopeTime([]byte(payload))
		if got != want || ok != (want != "") {
			t.Errorf("EnvelopeTime(%s) = %q, %v; want %q", payload, got, ok, want)
		}
	}
}

func BenchmarkEventTime(b *testing.B) {
	for b.Loop() {
		if _, _, ok := EventTime("2026-11-20T10:15:41.314187999Z"); !ok {
			b.Fatal("refused")
		}
	}
}

// FuzzEventTime: whatever the input, an accepted time's text is RFC 3339
// that Go reads back as the same instant, and RFC 3339 input comes back
// unchanged.
func FuzzEventTime(f *testing.F) {
	for _, s := range []string{"2026-11-20T10:15:41.314187999Z", "2014-08-01T13:28:10.2735393-04:00", "1700000000",
		"1521472262.908181", "1626230691572", "1626230691572.5", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		text, at, ok := EventTime(s)
		if !ok {
			return
		}
		if !isRFC3339(text) {
			t.Fatalf("EventTime(%q) = %q, not RFC 3339", s, text)
		}
		back, err := time.Parse(time.RFC3339Nano, text)
		if err != nil || !back.Equal(at) {
			t.Fatalf("EventTime(%q) = %q, %v; reads back as %v (%v)", s, text, at, back, err)
		}
		if isRFC3339(s) && text != s {
			t.Fatalf("EventTime(%q) rewrote RFC 3339 text as %q", s, text)
		}
	})
}
