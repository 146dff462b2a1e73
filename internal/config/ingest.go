package config

import "sort"

// applyAdmissionDefaults sets each provider's share of Ingest.MaxInFlight:
// max_in_flight defaults to a quarter of it (64 of 256: in the receiver
// benchmark 64 connections carried the ceiling of 7 900 events/s, so one
// provider alone may reach it, but a storm holds at most a quarter of the
// bound; an eighth made a well-behaved provider refuse itself once the
// machine slowed every answer: docs/BENCHMARKS.md "Under overload"),
// reserved_in_flight to 16, or less when the
// configured providers' reserves would take more than half of it; and
// ingest.reserved_unverified_bytes to a sixteenth of max_unverified_bytes,
// or less by the same rule.
func (c *Config) applyAdmissionDefaults() {
	names := make([]string, 0, len(c.Providers))
	for name, p := range c.Providers {
		if p != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	reserve := 16
	if n := len(names); n > 0 && reserve*n > c.Ingest.MaxInFlight/2 {
		reserve = max(1, c.Ingest.MaxInFlight/2/n)
	}
	if in := &c.Ingest; in.ReservedUnverifiedBytes == 0 {
		in.ReservedUnverifiedBytes = in.MaxUnverifiedBytes / 16
		if n := int64(len(names)); n > 0 && in.ReservedUnverifiedBytes*n > in.MaxUnverifiedBytes/2 {
			in.ReservedUnverifiedBytes = in.MaxUnverifiedBytes / 2 / n
		}
	}
	for _, name := range names {
		p := c.Providers[name]
		if p.MaxInFlight == 0 {
			p.MaxInFlight = max(1, c.Ingest.MaxInFlight/4)
		}
		if p.ReservedInFlight == 0 {
			p.ReservedInFlight = min(reserve, p.MaxInFlight)
		}
		if p.OverloadStatus == 0 {
			p.OverloadStatus = 503
		}
	}
}

// validateAdmission checks the providers' shares against the global bound.
func (c *Config) validateAdmission() error {
	total := 0
	for name, p := range c.Providers {
		if p == nil {
			continue
		}
		if p.MaxInFlight < 1 || p.ReservedInFlight < 0 || p.ReservedInFlight > p.MaxInFlight {
			return errorf("providers.%s.max_in_flight: must be at least 1 and at least reserved_in_flight (%d)", name, p.ReservedInFlight)
		}
		if p.OverloadStatus != 503 && p.OverloadStatus != 429 {
			return errorf("providers.%s.overload_status: %d is not 503 or 429", name, p.OverloadStatus)
		}
		total += p.ReservedInFlight
	}
	if total > c.Ingest.MaxInFlight {
		return errorf("ingest.max_in_flight: %d is less than the providers' reserved_in_flight together (%d)", c.Ingest.MaxInFlight, total)
	}
	n := 0
	for _, p := range c.Providers {
		if p != nil {
			n++
		}
	}
	if in := c.Ingest; in.ReservedUnverifiedBytes < 0 || in.ReservedUnverifiedBytes*int64(n) > in.MaxUnverifiedBytes {
		return errorf("ingest.reserved_unverified_bytes: %d for each of %d providers is negative or more than max_unverified_bytes (%d) together",
			in.ReservedUnverifiedBytes, n, in.MaxUnverifiedBytes)
	}
	return nil
}
