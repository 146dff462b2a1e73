package api_test

import (
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"gopkg.in/yaml.v3"

	"github.com/gatehouse/gatehouse/api"
)

type openAPIDoc struct {
	OpenAPI string `yaml:"openapi"`
	Servers []struct {
		URL string `yaml:"url"`
	} `yaml:"servers"`
	Paths map[string]map[string]struct {
		OperationID string                `yaml:"operationId"`
		Scope       string                `yaml:"x-scope"`
		Role        string                `yaml:"x-role"`
		Security    []map[string][]string `yaml:"security"`
		Responses   map[string]any        `yaml:"responses"`
		Parameters  []map[string]any      `yaml:"parameters"`
	} `yaml:"paths"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := yaml.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	return doc
}

// TestOpenAPIMatchesRoutes: the document's operations and the router's
// routes are the same set, every $ref resolves, and every operation
// documents its scope consistently with its security requirement.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	if doc.OpenAPI != "3.1.0" || len(doc.Servers) != 1 || doc.Servers[0].URL != api.Prefix {
		t.Fatalf("openapi %q servers %v", doc.OpenAPI, doc.Servers)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method, op := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+api.Prefix+path)
			if op.OperationID == "" {
				t.Errorf("%s %s: no operationId", method, path)
			}
			if op.Scope == "" {
				continue
			}
			if len(op.Security) == 0 || !slices.Contains(op.Security[0]["bearer"], op.Scope) {
				t.Errorf("%s %s: x-scope %s not in its bearer security requirement %v", method, path, op.Scope, op.Security)
			}
			for _, code := range []string{"401", "403"} {
				if _, ok := op.Responses[code]; !ok {
					t.Errorf("%s %s: response %s not documented", method, path, code)
				}
			}
		}
	}
	srv, err := api.New(api.Config{Pool: &pgxpool.Pool{}})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	srv.Routes(r)
	var routed []string
	if err := chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routed = append(routed, method+" "+strings.TrimSuffix(route, "/"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(documented)
	sort.Strings(routed)
	if !slices.Equal(documented, routed) {
		t.Fatalf("routes and openapi.yaml differ\nrouted:     %v\ndocumented: %v", routed, documented)
	}
	// Every local $ref points at something that exists.
	var raw map[string]any
	if err := yaml.Unmarshal(api.OpenAPI, &raw); err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\$ref: "#/([^"]+)"`).FindAllStringSubmatch(string(api.OpenAPI), -1) {
		var cur any = raw
		for _, part := range strings.Split(m[1], "/") {
			obj, ok := cur.(map[string]any)
			if !ok {
				cur = nil
				break
			}
			cur = obj[part]
		}
		if cur == nil {
			t.Errorf("$ref #/%s does not resolve", m[1])
		}
	}
}

// TestOpenAPIScopesAreEnforced calls every documented operation with a
// token holding every scope except the documented one (and the operator
// role, so the scope is the only thing missing) and expects 403
// insufficient_scope naming exactly that scope; operations documented as
// operator-only refuse a non-operator holding all scopes.
func TestOpenAPIScopesAreEnforced(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	doc := loadOpenAPI(t)
	params := strings.NewReplacer("{id}", "00000000-0000-0000-0000-000000000000", "{provider}", "acme", "{event_id}", "evt_1", "{object_id}", "pay_1")
	for path, ops := range doc.Paths {
		for method, op := range ops {
			url := api.Prefix + params.Replace(path)
			m := strings.ToUpper(method)
			if op.Scope == "" {
				if a := f.do(m, url, nil); a.status != 200 {
					t.Errorf("%s %s: public operation answered %d", m, url, a.status)
				}
				continue
			}
			if a := f.do(m, url, nil); a.status != 401 || a.challenge != `Bearer realm="gatehouse"` {
				t.Errorf("%s %s without credentials: %d %q", m, url, a.status, a.challenge)
			}
			var others []string
			for _, s := range api.AllScopes {
				if s != op.Scope {
					others = append(others, s)
				}
			}
			tok := f.token("alice", strings.Join(others, " "), "roles", []string{"gatehouse:operator"})
			a := f.do(m, url, nil, "Authorization", "Bearer "+tok)
			if a.status != 403 || a.body["error"] != "insufficient_scope" || a.body["scope"] != op.Scope {
				t.Errorf("%s %s without %s: %d %s", m, url, op.Scope, a.status, a.raw)
			}
			if op.Role == "operator" {
				tok := f.token("alice", strings.Join(api.AllScopes, " "))
				if a := f.do(m, url, nil, "Authorization", "Bearer "+tok); a.status != 403 || a.body["error"] != "forbidden" {
					t.Errorf("%s %s as non-operator: %d %s", m, url, a.status, a.raw)
				}
			}
		}
	}
}
