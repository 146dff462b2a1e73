package envelope

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// TestEveryAlternativeOfEveryRule is finding 5 of issue 25: for every
// catalogue kind whose fields are rules (EnvelopeFields), every alternative
// of its event id, event type and creation time rules is reached when the
// alternatives before it are absent, and gives the value the description
// `gatehouse providers` prints says (IDSource, TypeSource). The input of
// each case is built from the printed description alone: "header X" is set
// as a header, "body a.0.b" at that path of a JSON body, a quoted constant
// is expected as is, and "sha256:<…>" is the body's digest. Each
// alternative is tried with all its parts present, and with only the parts
// a join requires (its first part that is not a constant). On main every
// Discord interaction was typed "event" and every Twilio call "message".
func TestEveryAlternativeOfEveryRule(t *testing.T) {
	now := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	for _, name := range providers.Names() {
		k, _ := providers.Lookup(name)
		if k.Envelope != providers.EnvelopeFields || name == "hmac" {
			continue
		}
		rules := []struct {
			rule, printed string
			get           func(Event) string
		}{
			{"event id", k.IDSource(), func(p Event) string { return p.ID }},
			{"event type", k.TypeSource(), func(p Event) string { return p.Type }},
			{"created_at", k.CreatedAt.String(), func(p Event) string { return p.CreatedAt.Format(time.RFC3339) }},
		}
		for _, r := range rules {
			if r.printed == "" {
				continue
			}
			alts := strings.Split(r.printed, ", else ")
			for i, alt := range alts {
				for _, minimal := range []bool{false, true} {
					in := newAltInput(r.rule == "created_at")
					var want string
					if r.rule == "event id" && k.SignedID != "" && alt == k.SignedID {
						want = signedID // the signing scheme's verified id
					} else {
						want = in.fill(alt, minimal)
					}
					if want == "" {
						t.Errorf("%s %s: alternative %d (%s) has no part to set", name, r.rule, i, alt)
						continue
					}
					// Every other rule must still find a value: fill its last
					// alternative (never shadowing the one under test).
					for _, other := range rules {
						if other.rule != r.rule && other.printed != "" && !in.covers(other.printed) {
							o := strings.Split(other.printed, ", else ")
							in.fill(o[len(o)-1], false)
						}
					}
					if in.shadowed(alts[:i]) {
						t.Errorf("%s %s: alternative %d (%s) can never be reached: an earlier alternative is present whenever it is", name, r.rule, i, alt)
						continue
					}
					body := in.body(t)
					if strings.HasPrefix(want, "sha256:") {
						d := sha256.Sum256(body)
						want = "sha256:" + hex.EncodeToString(d[:])
					}
					var p Event
					var err error
					if k.Batch {
						var evs []Event
						evs, err = Parse(k, in.header, []byte("["+string(body)+"]"), signature.Result{EventID: signedID}, now)
						if err == nil {
							p = evs[0]
						}
					} else {
						p, err = parseFields(k, in.header, body, signature.Result{EventID: signedID}, now)
					}
					if err != nil {
						t.Errorf("%s %s alternative %d (%s): %v (body %s)", name, r.rule, i, alt, err, body)
						continue
					}
					if got := r.get(p); got != want {
						t.Errorf("%s %s alternative %d (%s), minimal=%v: got %q, want %q (body %s, headers %v)", name, r.rule, i, alt, minimal, got, want, body, in.header)
					}
				}
			}
		}
	}
}

// signedID is the id the signing scheme verified in these cases (GitHub's
// and Shopify's come from their signature headers, not from a field).
const signedID = "signed-id"

// replacement is the printed rewrite of a field ("/" as ".").
var replacement = regexp.MustCompile(` \("[^"]*" as "[^"]*"\)$`)

// altInput is a delivery built from printed descriptions.
type altInput struct {
	header http.Header
	obj    map[string]any
	paths  map[string]bool
	times  bool // values are times (created_at)
	n      int
}

func newAltInput(times bool) *altInput {
	return &altInput{header: http.Header{}, obj: map[string]any{}, paths: map[string]bool{}, times: times}
}

// fill sets the sources of one printed alternative (all its parts, or with
// minimal only those a join requires) and returns the value it should give.
func (in *altInput) fill(alt string, minimal bool) string {
	var out []string
	required := true
	for _, part := range strings.Split(alt, ` + "." + `) {
		part = replacement.ReplaceAllString(part, "") // test values hold no text to rewrite
		switch {
		case strings.HasPrefix(part, `"`):
			out = append(out, strings.Trim(part, `"`))
			continue
		case strings.HasPrefix(part, "sha256:"):
			return "sha256:" // computed from the final body
		}
		if !required && minimal {
			continue
		}
		required = false
		in.n++
		v := "v" + strconv.Itoa(in.n)
		if in.times {
			v = time.Date(2026, 1, in.n, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
		}
		switch {
		case strings.HasPrefix(part, "header "):
			in.header.Set(strings.TrimPrefix(part, "header "), v)
		case strings.HasPrefix(part, "body "):
			p := strings.TrimPrefix(part, "body ")
			in.set(p, v)
			in.paths[p] = true
		default:
			return ""
		}
		out = append(out, v)
	}
	return strings.Join(out, ".")
}

// covers reports whether any alternative of printed already has a source set.
func (in *altInput) covers(printed string) bool {
	for _, alt := range strings.Split(printed, ", else ") {
		if in.shadowed([]string{alt}) || alt == `sha256:<hex SHA-256 of the body>` {
			return true
		}
	}
	return false
}

// shadowed reports whether one of alts would be present: its first part
// that is not a constant is set.
func (in *altInput) shadowed(alts []string) bool {
	for _, alt := range alts {
		for _, part := range strings.Split(alt, ` + "." + `) {
			if strings.HasPrefix(part, `"`) {
				continue
			}
			switch {
			case strings.HasPrefix(part, "header "):
				if in.header.Get(strings.TrimPrefix(part, "header ")) != "" {
					return true
				}
			case strings.HasPrefix(part, "body "):
				if in.paths[strings.TrimPrefix(part, "body ")] {
					return true
				}
			case strings.HasPrefix(part, "sha256:"):
				return true
			}
			break
		}
	}
	return false
}

// set puts v at a dotted path, numbers indexing arrays.
func (in *altInput) set(path string, v string) {
	in.obj = setPath(in.obj, strings.Split(path, "."), v).(map[string]any)
}

func setPath(node any, segs []string, v string) any {
	if len(segs) == 0 {
		return v
	}
	if idx, err := strconv.Atoi(segs[0]); err == nil {
		arr, _ := node.([]any)
		for len(arr) <= idx {
			arr = append(arr, nil)
		}
		arr[idx] = setPath(arr[idx], segs[1:], v)
		return arr
	}
	m, ok := node.(map[string]any)
	if !ok {
		m = map[string]any{}
	}
	m[segs[0]] = setPath(m[segs[0]], segs[1:], v)
	return m
}

func (in *altInput) body(t *testing.T) []byte {
	b, err := json.Marshal(in.obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
