package text

import "testing"

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exact", 5, "exact"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"}, // é is two bytes: never half of it
		{"aé", 3, "aé"},
		{"€uro", 1, ""},
		{"€uro", 3, "€"},
		{"x", 0, ""},
		{"x", -1, ""},
	} {
		if got := Truncate(c.s, c.n); got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestElide(t *testing.T) {
	if got := Elide("short", 10); got != "short" {
		t.Errorf("Elide(short) = %q", got)
	}
	if got := Elide("abcdef", 3); got != "abc…" {
		t.Errorf("Elide(abcdef, 3) = %q", got)
	}
}
