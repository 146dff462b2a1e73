package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/gatehouse/gatehouse/internal/kafka"
)

// KafkaTLS configures TLS to the brokers (managed clusters: MSK, Confluent
// Cloud, Aiven, Redpanda Cloud…). The system's roots verify the brokers
// unless CAFile names another bundle; verification is never turned off.
type KafkaTLS struct {
	// Enabled turns TLS on; implied by any other field.
	Enabled bool `yaml:"enabled"`
	// CAFile is a PEM bundle of the CAs that sign the brokers' certificates.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a client certificate (mutual TLS); together.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName overrides the name checked in the brokers' certificates
	// (default: the host of each broker address).
	ServerName string `yaml:"server_name"`

	config *tls.Config
}

// KafkaSASL configures SASL authentication to the brokers.
type KafkaSASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (empty: no SASL).
	// PLAIN sends the password as is: use it only with TLS.
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	// Password is a secret reference ("env:NAME", "file:/path" or a literal).
	Password string `yaml:"password"`

	password []byte
}

// SASLMechanisms are the values kafka.sasl.mechanism accepts.
var SASLMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// TLSConfig returns the client TLS configuration built from kafka.tls, or
// nil when TLS is off. Config.Parse has already read and checked the files.
func (k *Kafka) TLSConfig() *tls.Config {
	if k.TLS.config == nil {
		return nil
	}
	return k.TLS.config.Clone()
}

// SASLPassword returns the resolved kafka.sasl.password.
func (k *Kafka) SASLPassword() []byte { return k.SASL.password }

// Security is kafka.tls and kafka.sasl as a client takes them
// (kafka.SecurityOpts).
func (k *Kafka) Security() kafka.Security {
	return kafka.Security{TLS: k.TLSConfig(), Mechanism: k.SASL.Mechanism, Username: k.SASL.Username, Password: k.SASL.password}
}

func (t *KafkaTLS) on() bool {
	return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != ""
}

// resolve reads the TLS files and the SASL password; every error names its key.
func (k *Kafka) resolve(getenv func(string) string) error {
	if k.SASL.Password != "" {
		v, err := ResolveSecret(k.SASL.Password, getenv)
		if err != nil {
			return errorf("kafka.sasl.password: %w", err)
		}
		k.SASL.password = v
	}
	if !k.TLS.on() {
		return nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: k.TLS.ServerName}
	if k.TLS.CAFile != "" {
		pem, err := os.ReadFile(k.TLS.CAFile)
		if err != nil {
			return errorf("kafka.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return errorf("kafka.tls.ca_file: %s holds no PEM certificate", k.TLS.CAFile)
		}
		c.RootCAs = pool
	}
	if (k.TLS.CertFile == "") != (k.TLS.KeyFile == "") {
		return errorf("kafka.tls.cert_file: cert_file and key_file go together")
	}
	if k.TLS.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(k.TLS.CertFile, k.TLS.KeyFile)
		if err != nil {
			return errorf("kafka.tls.cert_file: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	k.TLS.config = c
	return nil
}

func (k *Kafka) validateSecurity() error {
	s := k.SASL
	switch s.Mechanism {
	case "":
		if s.Username != "" || s.Password != "" {
			return errorf("kafka.sasl.mechanism: required with kafka.sasl.username or password (one of %v)", SASLMechanisms)
		}
		return nil
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		return errorf("kafka.sasl.mechanism: %q is not one of %v", s.Mechanism, SASLMechanisms)
	}
	if s.Username == "" {
		return errorf("kafka.sasl.username: required with kafka.sasl.mechanism %s", s.Mechanism)
	}
	if len(s.password) == 0 {
		return errorf("kafka.sasl.password: required with kafka.sasl.mechanism %s", s.Mechanism)
	}
	if s.Mechanism == "PLAIN" && k.TLS.config == nil {
		return fmt.Errorf("config: kafka.sasl.mechanism: PLAIN sends the password in clear text; enable kafka.tls")
	}
	return nil
}
