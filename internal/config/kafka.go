package config

import "github.com/gatehouse/gatehouse/internal/settings"

// RelayExternal is relay.mode for an outbox read by Debezium instead.
const RelayExternal = settings.RelayExternal

// SASLMechanisms are the values kafka.sasl.mechanism accepts.
var SASLMechanisms = settings.SASLMechanisms
