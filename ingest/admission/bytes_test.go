package admission

import "testing"

// The budget's accounting: a provider's bodies draw on its reserve, then
// on the shared pool; a client address past its bound is refused before
// the pool is looked at; give returns both, and the client's entry goes.
func TestBudgetReserveSharedAndClientAccounting(t *testing.T) {
	var b Bytes
	a, c := &ByteShare{reserved: 100}, &ByteShare{reserved: 100}
	b.SetLimits(400, 250, []*ByteShare{a, c})
	h1, h2 := b.Open(a, "x"), b.Open(a, "y")
	if err := h1.Take(150); err != nil { // 100 of a's reserve, 50 shared
		t.Fatal(err)
	}
	if err := h2.Take(150); err != nil { // 150 shared: the pool (200) is full
		t.Fatal(err)
	}
	if err := b.Open(a, "z").Take(1); err != ErrBodyBudget {
		t.Errorf("past a's reserve and the pool: %v, want ErrBodyBudget", err)
	}
	if err := h1.Take(101); err != ErrClientBytes {
		t.Errorf("x past its 250: %v, want ErrClientBytes", err)
	}
	hc := b.Open(c, "x")
	if err := hc.Take(100); err != nil { // c's reserve, though x holds 150 and the pool is full
		t.Fatalf("c's reserve: %v", err)
	}
	if err := hc.Take(1); err != ErrClientBytes { // x at 250
		t.Errorf("x at 250: %v, want ErrClientBytes", err)
	}
	h2.Release()
	h2.Release() // twice: nothing more
	if b.shared != 50 || a.used != 150 || b.used.Load() != 250 {
		t.Errorf("after release: shared %d, a %d, used %d; want 50 150 250", b.shared, a.used, b.used.Load())
	}
	h1.Give(120) // a keeps 30, all of it within its reserve
	if b.shared != 0 || a.used != 30 || b.clients["x"] != 130 {
		t.Errorf("after give: shared %d, a %d, x %d; want 0 30 130", b.shared, a.used, b.clients["x"])
	}
	h1.Release()
	hc.Release()
	if len(b.clients) != 0 || b.used.Load() != 0 || a.used != 0 || c.used != 0 {
		t.Errorf("all released: clients %v, used %d", b.clients, b.used.Load())
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:4431":             "192.0.2.7",
		"[::ffff:192.0.2.7]:4431":    "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ff::1]:443":   "2001:db8:1:2::/64",
		"[fe80::1%eth0]:443":         "fe80::/64",
		"not an address":             "not an address",
	} {
		if got := ClientKey(in); got != want {
			t.Errorf("ClientKey(%q) = %q, want %q", in, got, want)
		}
	}
}
