package consumers

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/wiring"
)

// handlersFromConfig is, for the pipeline tests, what cmd/gatehouse wires
// (consumers_config.go, consumerHandlers): wiring.Consumers' parts of each
// configured provider, every figure on reg.
func handlersFromConfig(configured map[string]*config.Provider, apiTimeout time.Duration, now func() time.Time, log *slog.Logger,
	reg prometheus.Registerer) (*Registry, error) {
	parts, err := wiring.Consumers(configured, apiTimeout, now, log, reg)
	if err != nil {
		return nil, err
	}
	out := NewRegistry()
	for name, p := range parts {
		RegisterProvider(out, name, p.Fetch, p.Forwards)
	}
	return out, nil
}

// maintenanceConfigOf is, for the retention test, what cmd/gatehouse
// wires (consumers_config.go, maintenanceConfig).
func maintenanceConfigOf(c *config.Config, deps MaintenanceConfig) MaintenanceConfig {
	out := deps
	_, out.KeyLifetime = c.Lifetimes()
	out.PayloadRetention = func(provider string) time.Duration { p, _ := c.Retention(provider); return p }
	out.ObjectRetention = c.ObjectRetention
	out.PartitionInterval, out.Ahead, out.CheckInterval = c.Storage.PartitionInterval, c.Storage.Ahead, c.Storage.CheckInterval
	return out
}
