package config

// The per-stage sections of Config each live in a file of their own; this
// file wires their hooks into Parse in one place.

func (c *Config) applySectionDefaults() {
	c.Ingest.ApplyDefaults()
	c.applyAdmissionDefaults()
	c.Kafka.ApplyDefaults()
	c.Relay.ApplyDefaults()
	c.Consumers.ApplyDefaults()
	c.Auth.ApplyDefaults()
	c.API.ApplyDefaults()
	c.Storage.ApplyDefaults()
	c.Tracing.ApplyDefaults()
}

func (c *Config) resolveSections(getenv func(string) string) error {
	for name, p := range c.Providers {
		if p == nil {
			continue
		}
		if p.APIKey != "" {
			v, err := ResolveSecret(p.APIKey, getenv)
			if err != nil {
				return errorf("providers.%s.api_key: %w", name, err)
			}
			p.apiKey = v
		}
		if p.VerifyToken != "" {
			v, err := ResolveSecret(p.VerifyToken, getenv)
			if err != nil {
				return errorf("providers.%s.verify_token: %w", name, err)
			}
			p.verifyToken = v
		}
		if err := p.resolveForward(name, getenv); err != nil {
			return err
		}
	}
	if err := c.Kafka.ResolveSecrets(secretResolver(getenv)); err != nil {
		return errorf("%w", err)
	}
	if err := c.API.ResolveSecrets(secretResolver(getenv)); err != nil {
		return errorf("%w", err)
	}
	if err := c.Auth.ResolveSecrets(secretResolver(getenv)); err != nil {
		return errorf("%w", err)
	}
	return nil
}

func (c *Config) validateSections() error {
	if err := c.Ingest.Validate(); err != nil {
		return errorf("%w", err)
	}
	if err := c.validateAdmission(); err != nil {
		return err
	}
	if err := c.validateForwardDestinations(); err != nil {
		return err
	}
	if err := c.Kafka.Validate(); err != nil {
		return errorf("%w", err)
	}
	if err := c.Relay.Validate(); err != nil {
		return errorf("%w", err)
	}
	if err := c.Consumers.Validate(); err != nil {
		return errorf("%w", err)
	}
	if err := c.API.Validate(); err != nil {
		return errorf("%w", err)
	}
	if err := c.Storage.Validate(); err != nil {
		return errorf("%w", err)
	}
	if err := c.validateRetention(); err != nil {
		return err
	}
	if err := c.Tracing.Validate(); err != nil {
		return errorf("%w", err)
	}
	if err := c.Auth.Validate(); err != nil {
		return errorf("%w", err)
	}
	return nil
}

// secretResolver is ResolveSecret under getenv, as a section's
// ResolveSecrets takes it.
func secretResolver(getenv func(string) string) func(ref string) ([]byte, error) {
	return func(ref string) ([]byte, error) { return ResolveSecret(ref, getenv) }
}
