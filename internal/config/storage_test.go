package config

import (
	"strings"
	"testing"
	"time"
)

func TestRetentionSettings(t *testing.T) {
	env := func(string) string { return "" }
	stripe := "providers:\n  s:\n    scheme: stripe\n    secrets: [{id: a, value: whsec_x}]\n"
	cfg, err := Parse([]byte(stripe), env)
	if err != nil {
		t.Fatal(err)
	}
	if p, d := cfg.Retention("s"); p != 30*24*time.Hour || d != 7*24*time.Hour {
		t.Errorf("defaults: retention %s, dedupe window %s; want 720h, 168h", p, d)
	}
	if k := cfg.Storage.KeyPartitionInterval; k != 24*time.Hour {
		t.Errorf("default key_partition_interval %s, want 24h", k)
	}
	if r := cfg.Storage.KeyFilterRate(); r != 0.001 {
		t.Errorf("default key_filter_false_positives %g, want 0.001", r)
	}
	if off, err := Parse([]byte("storage: {key_filter_false_positives: 0}\n"), env); err != nil || off.Storage.KeyFilterRate() != 0 {
		t.Errorf("key_filter_false_positives: 0 is off: %v", err)
	}
	if l := cfg.KeyLifetime("s"); l != 30*24*time.Hour {
		t.Errorf("key lifetime %s, want the longer of the two (720h)", l)
	}
	cfg, err = Parse([]byte(stripe+"    retention: 24h\n    dedupe_window: 96h\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if p, d := cfg.Retention("s"); p != 24*time.Hour || d != 96*time.Hour || cfg.KeyLifetime("s") != 96*time.Hour {
		t.Errorf("provider's own: retention %s, dedupe window %s", p, d)
	}
	if o := cfg.ObjectRetention("s"); o != 96*time.Hour {
		t.Errorf("default object retention %s, want the key lifetime 96h", o)
	}
	cfg, err = Parse([]byte("storage: {object_retention: 2000h}\n"+stripe+"    object_retention: 200h\n  t:\n    scheme: stripe\n    secrets: [{id: a, value: whsec_y}]\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if o, d := cfg.ObjectRetention("s"), cfg.ObjectRetention("t"); o != 200*time.Hour || d != 2000*time.Hour {
		t.Errorf("object retention: provider's own %s (want 200h), storage's %s (want 2000h)", o, d)
	}
	for _, c := range []struct{ yaml, want string }{
		{stripe + "    dedupe_window: 48h\n", "providers.s.dedupe_window: 48h0m0s is shorter than stripe's redelivery window 72h0m0s"},
		{stripe + "    retention: 1h\n", "providers.s.retention: 1h0m0s is shorter than storage.partition_interval"},
		{"storage: {partition_interval: 30s}\n", "storage.partition_interval: 30s is below 1m"},
		{"storage: {key_partition_interval: 10s}\n", "storage.key_partition_interval: 10s is below 1m"},
		{"storage: {key_filter_false_positives: 0.5}\n", "storage.key_filter_false_positives: 0.5; want 0 (off) or a rate below 0.5"},
		{"storage: {key_filter_false_positives: -0.01}\n", "storage.key_filter_false_positives: -0.01; want 0 (off)"},
		{"storage: {retention: 1h}\n", "storage.retention: 1h0m0s is shorter than storage.partition_interval"},
		{"storage: {object_retention: 24h}\n", "storage.object_retention: 24h0m0s is shorter than storage.dedupe_window (168h0m0s)"},
		{"storage: {object_retention: -1h}\n", "storage.object_retention: -1h0m0s must not be negative"},
		{stripe + "    object_retention: 48h\n", "providers.s: object_retention 48h0m0s is shorter than its dedupe window 168h0m0s"},
	} {
		_, err := Parse([]byte(c.yaml), env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.yaml, err, c.want)
		}
	}
}
