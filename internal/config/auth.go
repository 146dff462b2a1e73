package config

// Auth configures browser login and the API. Login is enabled when Issuer is set.
type Auth struct {
	Issuer string `yaml:"issuer"`
}

func (a *Auth) applyEnv(getenv func(string) string) {}
func (a *Auth) applyDefaults()                      {}
func (a *Auth) resolve(getenv func(string) string) error {
	return nil
}
func (a *Auth) validate() error { return nil }
