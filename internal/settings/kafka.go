package settings

import (
	"crypto/tls"
	"crypto/x509"
	"os"
)

// Kafka is the kafka: block, the Kafka client shared by the relay
// (ingest/relay) and the consumers.
type Kafka struct {
	// Brokers are seed brokers; empty means `gatehouse dev` embeds a kfake
	// broker. Env GATEHOUSE_KAFKA_BROKERS (comma-separated) overrides.
	Brokers []string `yaml:"brokers"`
	// ClientID is sent to the brokers. Default "gatehouse" (DefaultKafkaClientID).
	ClientID string `yaml:"client_id"`
	// Partitions and ReplicationFactor are used when gatehouse creates a topic.
	// Defaults 6 and 1. An existing topic's partition count is never changed.
	Partitions        int32 `yaml:"partitions"`
	ReplicationFactor int16 `yaml:"replication_factor"`
	// TopicConfigs are applied to topics gatehouse creates, e.g.
	// retention.ms. Default: retention.ms=604800000 (7 days).
	// A cluster of three or more brokers wants replication_factor 3 and
	// topic_configs {min.insync.replicas: "2"}: with the relay's acks=all,
	// an acknowledged record is then on two brokers before it counts.
	TopicConfigs map[string]string `yaml:"topic_configs"`
	// TLS and SASL secure the connection to managed clusters (TLS to the
	// brokers, SASL authentication). Default: plaintext, no authentication.
	TLS  KafkaTLS  `yaml:"tls"`
	SASL KafkaSASL `yaml:"sasl"`
}

// DefaultKafkaClientID is kafka.client_id's default.
const DefaultKafkaClientID = "gatehouse"

// ApplyDefaults fills the zero settings with their defaults.
func (k *Kafka) ApplyDefaults() {
	setDefault(&k.ClientID, DefaultKafkaClientID)
	setDefault(&k.Partitions, 6)
	setDefault(&k.ReplicationFactor, 1)
	if k.TopicConfigs == nil {
		k.TopicConfigs = map[string]string{"retention.ms": "604800000"}
	}
}

// Validate returns the first setting that is out of range, naming its key
// (the TLS files and the SASL password are resolved first:
// ResolveSecrets).
func (k *Kafka) Validate() error {
	if k.Partitions < 1 {
		return errorf("kafka.partitions: must be at least 1")
	}
	if k.ReplicationFactor < 1 {
		return errorf("kafka.replication_factor: must be at least 1")
	}
	return k.validateSecurity()
}

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
// nil when TLS is off. ResolveSecrets has read and checked the files.
func (k *Kafka) TLSConfig() *tls.Config {
	if k.TLS.config == nil {
		return nil
	}
	return k.TLS.config.Clone()
}

// SASLPassword returns the resolved kafka.sasl.password.
func (k *Kafka) SASLPassword() []byte { return k.SASL.password }

func (t *KafkaTLS) on() bool {
	return t.Enabled || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != ""
}

// ResolveSecrets reads the TLS files and sets the SASL password from its
// reference through resolve (internal/config's env:/file:/literal
// resolution); every error names its key.
func (k *Kafka) ResolveSecrets(resolve func(ref string) ([]byte, error)) error {
	if k.SASL.Password != "" {
		v, err := resolve(k.SASL.Password)
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
		return errorf("kafka.sasl.mechanism: PLAIN sends the password in clear text; enable kafka.tls")
	}
	return nil
}
