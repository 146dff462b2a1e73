package config

import (
	"sort"
	"time"
)

// Ingest bounds the webhook edge: what one process admits at once, and
// how it treats slow and oversized clients (docs/RECEIVER.md "Under overload").
// Every refusal is immediate, counted in gatehouse_webhook_refused_total
// {provider,reason} and answered with Retry-After where a retry can help.
type Ingest struct {
	// MaxInFlight bounds verified deliveries being served at once
	// (parsed, written, answered) over all providers: a delivery takes a
	// slot once its signature verified, so a client without the secret
	// never holds one (the bodies still being read are bounded by
	// MaxUnverifiedBytes). Past it a delivery is refused at once with 503
	// and Retry-After (reason saturated): the database cannot keep up, and
	// waiting would only move the refusal into the provider's own timeout.
	// Default 256 (about 4x what one process holds at its measured
	// ceiling: docs/BENCHMARKS.md).
	MaxInFlight int `yaml:"max_in_flight"`
	// QueueWait bounds how long a verified delivery of a provider within
	// its max_in_flight waits for a slot when the shared ones are all
	// taken; slots freed go to the waiting providers in turn. Past it:
	// 503 and Retry-After (reason saturated). Default 1s.
	QueueWait time.Duration `yaml:"queue_wait"`
	// RefusalHold is how long a refusal of a provider over its
	// max_in_flight is held before it is answered (503/429 with
	// Retry-After), so a closed-loop flood waits on a timer instead of
	// spinning on refusals; at most 1024 are held at once, past that the
	// refusal is immediate and closes the connection. Default 500ms; a
	// negative value answers at once.
	RefusalHold time.Duration `yaml:"refusal_hold"`
	// MaxUnverifiedBytes bounds the memory held by request bodies being
	// read before their signature is checked, over all providers and
	// connections. A body that would pass it is refused with 503 and
	// Retry-After (reason unverified_bytes). Default 67108864 (64 MiB:
	// 64 bodies of the default max_body_bytes at once).
	MaxUnverifiedBytes int64 `yaml:"max_unverified_bytes"`
	// ReservedUnverifiedBytes is each provider's own part of
	// MaxUnverifiedBytes: its bodies being read draw on it first, and past
	// it on the rest shared by every provider, so clients flooding one
	// provider's endpoint cannot take the bytes another provider's
	// deliveries are read into. Default 4194304 (a sixteenth of the
	// default bound, as reserved_in_flight is of max_in_flight), or less
	// when the configured providers' reserves would take more than half of
	// max_unverified_bytes.
	ReservedUnverifiedBytes int64 `yaml:"reserved_unverified_bytes"`
	// MaxUnverifiedBytesPerClient bounds the unverified bytes one client
	// address holds over all its connections and providers; past it that
	// client's delivery is refused with 503 and Retry-After (reason
	// client_unverified_bytes), held refusal_hold as an over-share refusal
	// is. The address is the TCP peer (an IPv6 peer
	// by its /64): gatehouse trusts no forwarding header, so behind a
	// reverse proxy every client is the proxy, and this should then equal
	// max_unverified_bytes. Default an eighth of max_unverified_bytes
	// (8388608).
	MaxUnverifiedBytesPerClient int64 `yaml:"max_unverified_bytes_per_client"`
	// MaxConnections bounds the public listener's open connections; past
	// it new connections wait in the kernel's accept queue. Default 4096.
	MaxConnections int `yaml:"max_connections"`
	// MaxHeaderBytes bounds a request's header block (431 past it).
	// Default 65536.
	MaxHeaderBytes int `yaml:"max_header_bytes"`
	// ReadHeaderTimeout bounds the time to send the request line and
	// headers (a slow-header client's connection is closed). Default 5s.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// MinBodyRate is the slowest body accepted, in bytes per second
	// averaged from the end of the headers, after BodyGrace: a slower body
	// is cut with 408 (reason slow_body, logged at WARN). Default 16384
	// (a 1 MiB body may take 64 s; a provider's body arrives in one or two
	// packets).
	MinBodyRate int64 `yaml:"min_body_rate"`
	// BodyGrace is the time any body gets before MinBodyRate applies.
	// Default 2s.
	BodyGrace time.Duration `yaml:"body_grace"`
}

func (in *Ingest) applyDefaults() {
	if in.MaxInFlight == 0 {
		in.MaxInFlight = 256
	}
	if in.QueueWait == 0 {
		in.QueueWait = time.Second
	}
	if in.RefusalHold == 0 {
		in.RefusalHold = 500 * time.Millisecond
	}
	if in.MaxUnverifiedBytes == 0 {
		in.MaxUnverifiedBytes = 64 << 20
	}
	if in.MaxUnverifiedBytesPerClient == 0 {
		in.MaxUnverifiedBytesPerClient = max(1<<16, in.MaxUnverifiedBytes/8)
	}
	if in.MaxConnections == 0 {
		in.MaxConnections = 4096
	}
	if in.MaxHeaderBytes == 0 {
		in.MaxHeaderBytes = 64 << 10
	}
	if in.ReadHeaderTimeout == 0 {
		in.ReadHeaderTimeout = 5 * time.Second
	}
	if in.MinBodyRate == 0 {
		in.MinBodyRate = 16 << 10
	}
	if in.BodyGrace == 0 {
		in.BodyGrace = 2 * time.Second
	}
}

func (in *Ingest) validate() error {
	if in.MaxInFlight < 1 || in.MaxConnections < 1 || in.MaxHeaderBytes < 4096 {
		return errorf("ingest: max_in_flight and max_connections must be at least 1, max_header_bytes at least 4096")
	}
	if in.QueueWait < 0 || in.RefusalHold > 30*time.Second {
		return errorf("ingest: queue_wait must not be negative, refusal_hold at most 30s")
	}
	if in.MaxUnverifiedBytes < 1<<16 {
		return errorf("ingest.max_unverified_bytes: must be at least 65536")
	}
	if in.MaxUnverifiedBytesPerClient < 1<<16 || in.MaxUnverifiedBytesPerClient > in.MaxUnverifiedBytes {
		return errorf("ingest.max_unverified_bytes_per_client: must be at least 65536 and at most max_unverified_bytes (%d)", in.MaxUnverifiedBytes)
	}
	if in.ReadHeaderTimeout <= 0 || in.BodyGrace <= 0 || in.MinBodyRate <= 0 {
		return errorf("ingest: read_header_timeout, body_grace and min_body_rate must be positive")
	}
	return nil
}

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
