package consumers_test

import (
	"testing"

	"github.com/gatehouse/gatehouse/consumers"
)

func TestNormalizeError(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"provider api GET /v1/payments/pay_8f3a2: status 503: busy", "provider api GET /v<n>/payments/pay_<id>: status 503: busy"},
		{"forward to https://svc.example/hook: status 500: req 9b2c4e1f0a7d at 2026-11-27T13:40:45.123Z",
			"forward to https://svc.example/hook: status 500: req <hex> at <time>"},
		{"object 123e4567-e89b-12d3-a456-426614174000 missing", "object <uuid> missing"},
		{"dial tcp 127.0.0.1:34567: connect: connection refused", "dial tcp <n>.<n>:<n>: connect: connection refused"},
		{"timeout after 1.5s,  retry   in 10 s", "timeout after <n>s, retry in <n> s"},
		{"hash 0xDEADBEEF and word deadbeef", "hash <hex> and word deadbeef"},
		{"no inbox row", "no inbox row"},
	} {
		if got := consumers.NormalizeError(tc.in); got != tc.want {
			t.Errorf("NormalizeError(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
	a := consumers.Fingerprint("provider api GET /v1/payments/pay_1: status 503: at 2026-01-01T00:00:00Z")
	b := consumers.Fingerprint("provider api GET /v1/payments/pay_2: status 503: at 2026-02-03T04:05:06Z")
	c := consumers.Fingerprint("provider api GET /v1/payments/pay_2: status 500: at 2026-02-03T04:05:06Z")
	if a != b || a == c || len(a) != 16 {
		t.Errorf("fingerprints %s %s %s: want the first two equal, the third different", a, b, c)
	}
}
