// Package doctor checks that a deployment is wired right before traffic
// arrives (`gatehouse doctor`): the configuration and its secrets, the
// database (reachable, wal_level, migrations, replication slot and
// publication, clock, partitions, retention), Kafka (brokers, topics),
// the OpenID Provider (discovery, JWKS) and the admin listener's address.
// Every check is read-only; each failure comes with its fix.
package doctor

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/internal/config"
)

// Check is the verdict of one check.
type Check struct {
	// Name says what was checked ("database reachable").
	Name string
	OK   bool
	// Skipped: the check was not run; Detail says why. It is neither
	// passed nor failed, and counted apart.
	Skipped bool
	// Detail is what was found ("PostgreSQL 16.4", the error).
	Detail string
	// Fix says what to do when the check failed.
	Fix string
}

// Options configures Run.
type Options struct {
	// Raw is the configuration file's content, Path its name (for fixes).
	Raw  []byte
	Path string
	// Getenv reads the environment (overrides and env: secrets). Required.
	Getenv func(string) string
	// HTTP fetches the OpenID Provider's documents. Default: a client
	// with Timeout.
	HTTP *http.Client
	// Timeout bounds each network check. Default 5s.
	Timeout time.Duration
	// Now is the local clock compared with the database's. Default time.Now.
	Now func() time.Time
	// MaxSkew is the clock difference to the database allowed. Default 2s.
	MaxSkew time.Duration
	// MaxSlotLag is the WAL a replication slot may retain. Default 1 GiB.
	MaxSlotLag int64
	// InterfaceAddrs lists this host's addresses, to tell whether "every
	// interface" includes a public one. Default net.InterfaceAddrs.
	InterfaceAddrs func() ([]net.Addr, error)
	// Migrate reports the database's pending migrations without applying
	// any. Default PendingMigrations (a read-only probe).
	Migrate func(ctx context.Context, dbURL string) (pending string, err error)
}

// Run runs every check that applies to the configuration and returns
// them in order. A check that is not run (no brokers or no OP configured,
// the database unreachable) is returned Skipped, with the reason.
func Run(ctx context.Context, o Options) []Check {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: o.Timeout}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxSkew <= 0 {
		o.MaxSkew = 2 * time.Second
	}
	if o.MaxSlotLag <= 0 {
		o.MaxSlotLag = 1 << 30
	}
	if o.InterfaceAddrs == nil {
		o.InterfaceAddrs = net.InterfaceAddrs
	}
	if o.Migrate == nil {
		o.Migrate = PendingMigrations
	}
	var out []Check
	refs, err := config.SecretRefs(o.Raw, o.Getenv)
	if err != nil {
		return []Check{{Name: "configuration loads", Detail: err.Error(), Fix: "gatehouse config check --config " + o.Path + " names the key and line"},
			skip("every other check", "the configuration does not load")}
	}
	cfg, err := config.ParseWithPlaceholders(o.Raw, o.Getenv)
	if err != nil {
		out = append(out, Check{Name: "configuration loads", Detail: err.Error(), Fix: "gatehouse config check --config " + o.Path + " names the key and line"})
	} else {
		out = append(out, Check{Name: "configuration loads", OK: true, Detail: fmt.Sprintf("%s, %d providers", o.Path, len(cfg.Providers))})
	}
	out = append(out, secretChecks(refs)...)
	if cfg == nil {
		return append(out, skip("every other check (database, Kafka, OpenID Provider, admin listener)", "the configuration does not load"))
	}
	out = append(out, adminCheck(cfg.AdminListen, o.InterfaceAddrs))
	out = append(out, databaseChecks(ctx, o, cfg)...)
	out = append(out, kafkaChecks(ctx, o, cfg)...)
	out = append(out, oidcChecks(ctx, o, cfg)...)
	return out
}

// skip is a check not run, with the reason.
func skip(name, reason string) Check { return Check{Name: name, Skipped: true, Detail: reason} }

// Tally counts checks by verdict.
type Tally struct{ Passed, Failed, Skipped int }

// Count tallies checks.
func Count(checks []Check) Tally {
	var t Tally
	for _, c := range checks {
		switch {
		case c.Skipped:
			t.Skipped++
		case c.OK:
			t.Passed++
		default:
			t.Failed++
		}
	}
	return t
}

// Write prints one line per check, ✓ passed, ✗ failed (the fix under
// it) or ○ skipped (with the reason), then the tally; it returns it.
func Write(w io.Writer, checks []Check) Tally {
	for _, c := range checks {
		mark, detail := "✓", c.Detail
		switch {
		case c.Skipped:
			mark, detail = "○", "skipped: "+c.Detail
		case !c.OK:
			mark = "✗"
		}
		line := mark + " " + c.Name
		if detail != "" {
			line += ": " + strings.Join(strings.Fields(detail), " ")
		}
		fmt.Fprintln(w, line)
		if !c.OK && !c.Skipped && c.Fix != "" {
			fmt.Fprintln(w, "    fix: "+c.Fix)
		}
	}
	t := Count(checks)
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", t.Passed, t.Failed, t.Skipped)
	return t
}

// secretChecks is one ✓ line when every secret resolves, else one ✗ per
// secret that does not (each counted once).
func secretChecks(refs []config.SecretRef) []Check {
	var out []Check
	for _, r := range refs {
		if r.Err == nil {
			continue
		}
		where := r.Path
		if r.Line > 0 {
			where = fmt.Sprintf("%s (line %d)", r.Path, r.Line)
		}
		if r.Env != "" {
			where = fmt.Sprintf("%s (from %s)", r.Path, r.Env)
		}
		fix := "set the secret"
		switch {
		case strings.HasPrefix(r.Reference, "env:"):
			fix = "set the environment variable " + strings.TrimPrefix(r.Reference, "env:") + " in the process's environment (a Secret's env entry)"
		case strings.HasPrefix(r.Reference, "file:"):
			fix = "create " + strings.TrimPrefix(r.Reference, "file:") + " readable by gatehouse (a mounted Secret), or point the reference at the file that holds it"
		}
		out = append(out, Check{Name: "secret " + where + " resolvable", Detail: r.Err.Error(), Fix: fix})
	}
	if len(out) == 0 {
		return []Check{{Name: "secrets resolvable", OK: true, Detail: fmt.Sprintf("%d of %d", len(refs), len(refs))}}
	}
	return out
}

// adminCheck refuses an admin listener on a public address, or on every
// interface of a host that has one: /metrics and the probes are for the
// cluster, not the world. Every interface of a host whose addresses are
// all private (a pod) passes.
func adminCheck(addr string, interfaces func() ([]net.Addr, error)) Check {
	c := Check{Name: "admin listener not public", Detail: addr,
		Fix: "set admin_listen (GATEHOUSE_ADMIN_LISTEN) to 127.0.0.1:9090, or to this host's private address"}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		c.Detail = fmt.Sprintf("%s: %v", addr, err)
		return c
	}
	var ips []net.IP
	switch {
	case host == "" || host == "0.0.0.0" || host == "::":
		addrs, err := interfaces()
		if err != nil {
			c.Detail = fmt.Sprintf("%s: list interfaces: %v", addr, err)
			return c
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				ips = append(ips, n.IP)
			}
		}
		c.Detail = addr + " (every interface)"
	case net.ParseIP(host) != nil:
		ips = []net.IP{net.ParseIP(host)}
	default:
		if ips, err = net.LookupIP(host); err != nil {
			c.Detail = fmt.Sprintf("%s: %v", addr, err)
			return c
		}
	}
	for _, ip := range ips {
		if !ip.IsLoopback() && !ip.IsPrivate() && !ip.IsLinkLocalUnicast() {
			c.Detail = fmt.Sprintf("%s listens on the public address %s", addr, ip)
			return c
		}
	}
	c.OK = true
	return c
}
