package settings

import "time"

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
	// WriteTimeout bounds the atomic write of a delivery's event (the
	// statement that holds it, waiting for it included); past it the
	// provider gets 503 with Retry-After instead of waiting into its own
	// timeout (the 504 of SPEC.md). Default 5s.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// RetryAfter is the Retry-After of every 503 and 429 the receiver
	// answers, in whole seconds. Default 5s.
	RetryAfter time.Duration `yaml:"retry_after"`
}

// ApplyDefaults fills the zero settings with their defaults.
func (in *Ingest) ApplyDefaults() {
	setDefault(&in.MaxInFlight, 256)
	setDefault(&in.QueueWait, time.Second)
	setDefault(&in.RefusalHold, 500*time.Millisecond)
	setDefault(&in.MaxUnverifiedBytes, 64<<20)
	if in.MaxUnverifiedBytesPerClient == 0 {
		in.MaxUnverifiedBytesPerClient = max(1<<16, in.MaxUnverifiedBytes/8)
	}
	setDefault(&in.MaxConnections, 4096)
	setDefault(&in.MaxHeaderBytes, 64<<10)
	setDefault(&in.ReadHeaderTimeout, 5*time.Second)
	setDefault(&in.MinBodyRate, 16<<10)
	setDefault(&in.BodyGrace, 2*time.Second)
	setDefault(&in.WriteTimeout, 5*time.Second)
	setDefault(&in.RetryAfter, 5*time.Second)
}

// Validate returns the first setting that is out of range, naming its key.
func (in *Ingest) Validate() error {
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
	if in.WriteTimeout <= 0 {
		return errorf("ingest.write_timeout: must be positive")
	}
	if in.RetryAfter < time.Second || in.RetryAfter%time.Second != 0 {
		return errorf("ingest.retry_after: %v must be whole seconds, at least 1s (the Retry-After header counts seconds)", in.RetryAfter)
	}
	return nil
}
