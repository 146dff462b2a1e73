package config

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

//go:generate go run ./configgen

// keyInfo is what the structs cannot say about a key: its environment
// override, when it is required, the values it allows, whether it is a
// secret, a default that is not one value, and a description where the
// field has no doc comment of its own.
type keyInfo struct {
	env         string
	required    string
	allowed     []string
	secret      bool
	defaultNote string
	doc         string
}

// keyMeta is the per-key registry, by Key.Path; its env entries are the
// only environment overrides (applyEnv applies them).
var keyMeta = map[string]keyInfo{
	"listen":       {env: "GATEHOUSE_LISTEN"},
	"admin_listen": {env: "GATEHOUSE_ADMIN_LISTEN"},
	"database_url": {env: "GATEHOUSE_DATABASE_URL", required: "by the subcommands that use the database", secret: true},
	"log_level":    {env: "GATEHOUSE_LOG_LEVEL", allowed: []string{"debug", "info", "warn", "error"}},

	"providers.<name>.scheme":                   {required: "always", allowed: providers.Names()},
	"providers.<name>.secrets":                  {required: "at least one"},
	"providers.<name>.secrets[].id":             {defaultNote: "secret<n> (its position, from 1)", doc: "A label of the secret for metrics and logs, never its value."},
	"providers.<name>.secrets[].value":          {required: "always", secret: true, doc: "The signing secret: a literal, env:NAME or file:/path."},
	"providers.<name>.tolerance":                {defaultNote: "the scheme's documented window (twitch 10m, calendly 3m, linear 1m), else 300s"},
	"providers.<name>.timestamp_header":         {required: "by scheme reference"},
	"providers.<name>.signature_header":         {required: "by scheme reference"},
	"providers.<name>.hmac":                     {required: "by scheme hmac"},
	"providers.<name>.hmac.algorithm":           {allowed: []string{"sha256", "sha1", "sha512"}, defaultNote: "sha256"},
	"providers.<name>.hmac.encoding":            {allowed: []string{"hex", "base64"}, defaultNote: "hex"},
	"providers.<name>.hmac.secret_encoding":     {allowed: []string{"raw", "base64"}, defaultNote: "raw"},
	"providers.<name>.hmac.header":              {required: "always"},
	"providers.<name>.hmac.prefix":              {doc: "Text before the signature in the header (\"sha256=\", \"v0=\"); unused with part_separator."},
	"providers.<name>.hmac.part_separator":      {doc: "When set (\",\" or \";\"), the header is a list of key=value parts (Stripe's \"t=…,v1=…\", Paddle's \"ts=…;h1=…\")."},
	"providers.<name>.hmac.content":             {defaultNote: `"{body}"`},
	"providers.<name>.hmac.timestamp.header":    {doc: "The header holding the signed timestamp."},
	"providers.<name>.hmac.timestamp.part":      {doc: "The part of the signature header holding the signed timestamp (t, ts)."},
	"providers.<name>.hmac.timestamp.path":      {doc: "A dotted JSON path in the body to the signed timestamp, read only after the signature matched."},
	"providers.<name>.hmac.timestamp.format":    {allowed: []string{"unix", "unix_ms", "rfc3339"}, defaultNote: "unix"},
	"providers.<name>.event_id":                 {required: "by scheme hmac"},
	"providers.<name>.event_type":               {required: "by scheme hmac"},
	"providers.<name>.public_url":               {required: "by the schemes that sign the URL (twilio, square, hubspot, an hmac content with {url})"},
	"providers.<name>.verify_token":             {required: "by scheme meta", secret: true},
	"providers.<name>.max_in_flight":            {defaultNote: "a quarter of ingest.max_in_flight (64)"},
	"providers.<name>.reserved_in_flight":       {defaultNote: "16, less when the providers' reserves would exceed half of ingest.max_in_flight"},
	"providers.<name>.replay_guard_ttl":         {defaultNote: "72h for a scheme without a signed timestamp, else twice its tolerance"},
	"providers.<name>.overload_status":          {allowed: []string{"503", "429"}},
	"providers.<name>.aggregate_id_path":        {defaultNote: "the scheme's Kafka key (gatehouse providers), else the event id"},
	"providers.<name>.topic":                    {defaultNote: "gatehouse.webhooks.<name>"},
	"providers.<name>.search":                   {allowed: []string{"scan", "indexed"}, defaultNote: "scan"},
	"providers.<name>.api_key":                  {secret: true},
	"providers.<name>.api_rate_burst":           {defaultNote: "5% of api_rate_limit rounded up, at least 1"},
	"providers.<name>.api_auth":                 {allowed: []string{providers.AuthBearer, providers.AuthBot, providers.AuthBasic, providers.AuthHeader, providers.AuthNone}, defaultNote: "the catalogue's (bearer)"},
	"providers.<name>.api_accept":               {defaultNote: "the catalogue's (application/json)"},
	"providers.<name>.fetch[].types":            {required: "always"},
	"providers.<name>.fetch[].method":           {allowed: []string{"GET", "POST"}, defaultNote: "GET"},
	"providers.<name>.forward[].url":            {required: "always"},
	"providers.<name>.forward[].secret":         {required: "always", secret: true},
	"providers.<name>.forward[].include":        {allowed: []string{IncludeObject}},
	"providers.<name>.forward[].rate_burst":     {defaultNote: "5% of rate_limit, at least 1"},
	"providers.<name>.object_retention":         {defaultNote: "storage.object_retention"},
	"providers.<name>.retention":                {defaultNote: "storage.retention"},
	"providers.<name>.dedupe_window":            {defaultNote: "storage.dedupe_window"},
	"kafka.brokers":                             {env: "GATEHOUSE_KAFKA_BROKERS"},
	"kafka.sasl.mechanism":                      {allowed: SASLMechanisms},
	"kafka.sasl.username":                       {required: "with kafka.sasl.mechanism", doc: "The SASL user name."},
	"kafka.sasl.password":                       {required: "with kafka.sasl.mechanism", secret: true},
	"relay.mode":                                {allowed: []string{"replication", "poll", RelayExternal}},
	"relay.on_published":                        {doc: "Removed with migration 00050: setting it is an error that says so."},
	"relay.retain_published":                    {doc: "Removed with migration 00050: setting it is an error that says so."},
	"consumers.providers":                       {defaultNote: "every configured provider"},
	"auth.issuer":                               {env: "GATEHOUSE_AUTH_ISSUER"},
	"auth.client_id":                            {env: "GATEHOUSE_AUTH_CLIENT_ID", required: "with auth.issuer"},
	"auth.client_secret":                        {env: "GATEHOUSE_AUTH_CLIENT_SECRET", secret: true},
	"auth.redirect_url":                         {env: "GATEHOUSE_AUTH_REDIRECT_URL", required: "with auth.issuer"},
	"auth.post_logout_redirect_url":             {env: "GATEHOUSE_AUTH_POST_LOGOUT_REDIRECT_URL"},
	"auth.refresh":                              {defaultNote: "true"},
	"auth.userinfo":                             {defaultNote: "true"},
	"auth.token_endpoint_auth_method":           {allowed: []string{"client_secret_basic", "client_secret_post"}, defaultNote: "the first of the two the OP lists, else client_secret_basic"},
	"auth.encryption_keys":                      {env: "GATEHOUSE_AUTH_ENCRYPTION_KEY", required: "with auth.issuer"},
	"auth.encryption_keys[].id":                 {defaultNote: "key<n> (its position, from 1; env for GATEHOUSE_AUTH_ENCRYPTION_KEY)", doc: "The key's id, stored beside each ciphertext."},
	"auth.encryption_keys[].value":              {required: "always", secret: true, doc: "A secret reference to 32 random bytes in base64 (openssl rand -base64 32)."},
	"auth.operator_token":                       {env: "GATEHOUSE_AUTH_OPERATOR_TOKEN", secret: true},
	"auth.tls_cert_file":                        {env: "GATEHOUSE_TLS_CERT_FILE"},
	"auth.tls_key_file":                         {env: "GATEHOUSE_TLS_KEY_FILE"},
	"api.audience":                              {env: "GATEHOUSE_API_AUDIENCE", required: "with api.issuers"},
	"api.token_type":                            {allowed: []string{"at+jwt", "compat"}},
	"api.issuers[].issuer":                      {required: "always"},
	"api.issuers[].jwks_url":                    {defaultNote: "jwks_uri of the issuer's discovery document"},
	"api.issuers[].algorithms":                  {defaultNote: "[RS256, PS256, ES256, EdDSA]"},
	"api.issuers[].roles_claim":                 {defaultNote: "roles"},
	"api.issuers[].introspection":               {doc: "RFC 7662 introspection of opaque tokens at this issuer, on when its client_id is set."},
	"api.issuers[].introspection.url":           {defaultNote: "introspection_endpoint of the issuer's discovery document"},
	"api.issuers[].introspection.client_secret": {secret: true, required: "with introspection.client_id"},
	"api.operators[].issuer":                    {required: "always", doc: "The operator's issuer, compared exactly with a token's iss."},
	"api.operators[].subject":                   {required: "always", doc: "The operator's subject at that issuer."},
	"storage.object_retention":                  {defaultNote: "the provider's key lifetime (the longer of its retention and dedupe window)"},
	"tracing.service_name":                      {defaultNote: "gatehouse-<subcommand>"},

	// Erasure notices to forward destinations (docs/SECURITY.md#erasure).
	"providers.<name>.forward[].erasure_notices": {defaultNote: "true"},
}

func init() {
	// The catalogue field language's keys are the same under event_id,
	// event_type and created_at.
	for _, f := range []string{"event_id", "event_type", "created_at"} {
		p := "providers.<name>." + f + "[]."
		keyMeta[p+"header"] = keyInfo{doc: "A request header holding the value."}
		keyMeta[p+"path"] = keyInfo{doc: "A dotted path into the body (numbers index arrays: entry.0.id)."}
		keyMeta[p+"value"] = keyInfo{doc: "A constant value."}
		keyMeta[p+"digest"] = keyInfo{doc: "true: sha256:<hex> of the body (for providers that send no event id)."}
		keyMeta[p+"join"] = keyInfo{doc: "Fields whose present values are joined by \".\"; absent when its first part that is not a value is absent."}
		keyMeta[p+"replace"] = keyInfo{doc: "Pairs of old and new text replaced in the value, every occurrence: [\"/\", \".\"] turns orders/create into orders.create."}
	}
}

// applyEnv applies the environment overrides of keyMeta: a non-empty
// variable replaces its key's value; GATEHOUSE_KAFKA_BROKERS is a
// comma-separated list, and GATEHOUSE_AUTH_ENCRYPTION_KEY becomes the
// primary key (id "env") in front of auth.encryption_keys.
func (c *Config) applyEnv(getenv func(string) string) {
	for _, path := range slices.Sorted(maps.Keys(keyMeta)) {
		name := keyMeta[path].env
		if name == "" {
			continue
		}
		v := getenv(name)
		switch {
		case v == "":
		case path == "kafka.brokers":
			c.Kafka.Brokers = splitList(v)
		case path == "auth.encryption_keys":
			c.Auth.EncryptionKeys = append([]settings.AuthKey{{ID: "env", Value: v}}, c.Auth.EncryptionKeys...)
		default:
			stringAt(reflect.ValueOf(c).Elem(), path).SetString(v)
		}
	}
}

// stringAt is the string field at a path of plain keys (no list or map).
func stringAt(v reflect.Value, path string) reflect.Value {
	for _, seg := range strings.Split(path, ".") {
		t := v.Type()
		for i := range t.NumField() {
			if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name == seg {
				v = v.Field(i)
				break
			}
		}
	}
	return v
}
