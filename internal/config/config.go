// Package config loads gatehouse's YAML configuration, applies environment
// overrides, resolves secret references and validates the result.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gatehouse/gatehouse/internal/settings"
)

// Config is the whole configuration of one gatehouse process.
type Config struct {
	// Listen is the public HTTP address (webhooks, login, API). Default ":8080".
	Listen string `yaml:"listen"`
	// AdminListen serves /metrics, /healthz and /readyz. Default
	// "127.0.0.1:9090": the admin surface is not exposed unless asked to
	// (the Helm chart sets ":9090" for the kubelet's probes and Prometheus).
	AdminListen string `yaml:"admin_listen"`
	// DatabaseURL is a libpq/pgx connection string, or a secret reference to
	// one ("env:NAME", "file:/path": a mounted Secret, or the file `make run`
	// writes). Required by the subcommands that use the database.
	DatabaseURL string `yaml:"database_url"`
	dbErr       error  // a database_url reference that could not be read
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string `yaml:"log_level"`
	// Providers maps a provider name (the path segment of /webhooks/{provider}) to its endpoint.
	Providers map[string]*Provider `yaml:"providers"`
	// Ingest bounds the webhook edge (admission control, slow clients).
	Ingest settings.Ingest `yaml:"ingest"`
	// Kafka configures the brokers used by relay and consumers.
	Kafka settings.Kafka `yaml:"kafka"`
	// Relay configures the outbox relay.
	Relay settings.Relay `yaml:"relay"`
	// Consumers configures the Kafka consumers.
	Consumers settings.Consumers `yaml:"consumers"`
	// Auth configures browser login, sessions and the bearer-protected API.
	Auth settings.Auth `yaml:"auth"`
	// API configures the /api/v1 resource server (bearer tokens, operators).
	API settings.API `yaml:"api"`
	// Storage configures retention, the dedupe window and partitions.
	Storage settings.Storage `yaml:"storage"`
	// Tracing configures OpenTelemetry tracing (off by default).
	Tracing settings.Tracing `yaml:"tracing"`
}

var providerName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// Load reads the YAML file at path (a missing file is an error unless
// allowMissing), applies GATEHOUSE_* environment overrides through getenv,
// fills defaults, resolves secret references and validates everything. The
// returned error names the offending key.
func Load(path string, allowMissing bool, getenv func(string) string) (*Config, error) {
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && allowMissing:
		raw = nil
	case err != nil:
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(raw, getenv)
}

// Parse is Load without the file: it decodes raw YAML (unknown keys are
// errors), applies overrides and defaults, resolves secrets and validates.
func Parse(raw []byte, getenv func(string) string) (*Config, error) {
	cfg := &Config{}
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		dec.KnownFields(true)
		if err := dec.Decode(cfg); err != nil {
			return nil, fmt.Errorf("config: %w", explainYAML(raw, err))
		}
	}
	cfg.applyEnv(getenv)
	cfg.applyDefaults()
	if err := cfg.resolve(getenv); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// DefaultAdminListen is admin_listen's default: loopback only.
const DefaultAdminListen = "127.0.0.1:9090"

func (c *Config) applyDefaults() {
	if c.Listen == "" {
		c.Listen = ":8080"
	}
	if c.AdminListen == "" {
		c.AdminListen = DefaultAdminListen
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	for name, p := range c.Providers {
		if p != nil {
			p.applyDefaults(name)
		}
	}
	c.applySectionDefaults()
}

func (c *Config) resolve(getenv func(string) string) error {
	// Reported by RequireDatabase only: subcommands without a database
	// (send, tail) must not fail on it.
	if strings.HasPrefix(c.DatabaseURL, "env:") || strings.HasPrefix(c.DatabaseURL, "file:") {
		v, err := ResolveSecret(c.DatabaseURL, getenv)
		c.DatabaseURL, c.dbErr = string(v), err
	}
	for name, p := range c.Providers {
		if p == nil {
			continue
		}
		for i := range p.Secrets {
			v, err := ResolveSecret(p.Secrets[i].Value, getenv)
			if err != nil {
				return fmt.Errorf("config: providers.%s.secrets[%d].value: %w", name, i, err)
			}
			p.Secrets[i].resolved = v
		}
	}
	return c.resolveSections(getenv)
}

func (c *Config) validate() error {
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("config: log_level: %q is not one of debug, info, warn, error", c.LogLevel)
	}
	for name, p := range c.Providers {
		if !providerName.MatchString(name) {
			return fmt.Errorf("config: providers.%s: name must match %s", name, providerName)
		}
		if p == nil {
			return fmt.Errorf("config: providers.%s: empty provider", name)
		}
		if err := p.validate(); err != nil {
			return fmt.Errorf("config: providers.%s.%w", name, err)
		}
	}
	if err := validateTopics(c.Providers, len(c.Consumers.RetryDelays)); err != nil {
		return err
	}
	return c.validateSections()
}

// RequireDatabase reports a clear error when no database is configured.
func (c *Config) RequireDatabase() error {
	if c.dbErr != nil {
		return fmt.Errorf("config: database_url: %w (run `make run` first, or set GATEHOUSE_DATABASE_URL)", c.dbErr)
	}
	if c.DatabaseURL == "" {
		return errors.New("config: database_url: required (or set GATEHOUSE_DATABASE_URL)")
	}
	return nil
}

// ResolveSecret turns a secret reference into its value: "env:NAME" reads the
// environment variable NAME, "file:/path" reads the file (trailing newline
// trimmed); anything else is the literal value. An empty result is an error.
func ResolveSecret(ref string, getenv func(string) string) ([]byte, error) {
	var v string
	switch {
	case strings.HasPrefix(ref, "env:"):
		name := strings.TrimPrefix(ref, "env:")
		v = getenv(name)
		if v == "" {
			return nil, fmt.Errorf("environment variable %s is empty or unset", name)
		}
	case strings.HasPrefix(ref, "file:"):
		b, err := os.ReadFile(strings.TrimPrefix(ref, "file:"))
		if err != nil {
			return nil, fmt.Errorf("read secret file: %w", err)
		}
		v = strings.TrimRight(string(b), "\r\n")
	default:
		v = ref
	}
	if v == "" {
		return nil, errors.New("secret is empty")
	}
	return []byte(v), nil
}

// Duration is a time.Duration that YAML writes as "300s" or "10m".
type Duration = time.Duration
