package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// StartPrismProxy runs Prism as a validating proxy in front of upstream:
// each request is checked against the OpenAPI document spec (a violation
// is answered 422 naming it, and never forwarded), and with --errors an
// answer Prism finds in violation is an error too. A test puts a small
// upstream of its own behind it when the provider's behaviour (a webhook
// sent back by a redelivery, the events it sent) is more than the
// description's static examples.
func StartPrismProxy(ctx context.Context, spec, upstream string) (*Prism, error) {
	return startPrism(ctx, "proxy", spec, upstream, "--errors")
}

// StripeSpec writes the part of Stripe's published OpenAPI description
// (spec3.json, as the pinned stripe-mock module embeds it) that serves the
// given paths ("/v1/events") into dir and returns its file: the paths'
// operations with their 2xx answers only (the shared error answer reaches
// half of Stripe's API) and the components they reach, so Prism loads in
// a second instead of minutes.
func StripeSpec(ctx context.Context, dir string, paths ...string) (string, error) {
	mod, err := stripeMockDir(ctx)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(mod, "embedded", "openapi", "spec3.json"))
	if err != nil {
		return "", err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", fmt.Errorf("stripe spec3.json: %w", err)
	}
	all, _ := doc["paths"].(map[string]any)
	keep := map[string]any{}
	for _, p := range paths {
		item, ok := all[p].(map[string]any)
		if !ok {
			return "", fmt.Errorf("stripe spec3.json: no path %s", p)
		}
		for _, op := range item {
			if resp, ok := op.(map[string]any)["responses"].(map[string]any); ok {
				for code := range resp {
					if !strings.HasPrefix(code, "2") {
						delete(resp, code)
					}
				}
			}
		}
		keep[p] = item
	}
	doc["paths"] = keep
	delete(doc, "webhooks")
	comps, _ := doc["components"].(map[string]any)
	reached := map[string]map[string]any{}
	todo := refsIn(keep, nil)
	for len(todo) > 0 {
		ref := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		parts := strings.SplitN(strings.TrimPrefix(ref, "#/components/"), "/", 2)
		if len(parts) != 2 || reached[parts[0]][parts[1]] != nil {
			continue
		}
		group, _ := comps[parts[0]].(map[string]any)
		c, ok := group[parts[1]]
		if !ok {
			return "", fmt.Errorf("stripe spec3.json: no component %s", ref)
		}
		if reached[parts[0]] == nil {
			reached[parts[0]] = map[string]any{}
		}
		reached[parts[0]][parts[1]] = c
		todo = refsIn(c, todo)
	}
	pruned := map[string]any{"securitySchemes": comps["securitySchemes"]}
	for group, m := range reached {
		pruned[group] = m
	}
	doc["components"] = pruned
	out, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "stripe-openapi.json")
	return file, os.WriteFile(file, out, 0o644)
}

// refsIn appends every "$ref" below v to refs.
func refsIn(v any, refs []string) []string {
	switch t := v.(type) {
	case map[string]any:
		if r, ok := t["$ref"].(string); ok {
			refs = append(refs, r)
		}
		for _, c := range t {
			refs = refsIn(c, refs)
		}
	case []any:
		for _, c := range t {
			refs = refsIn(c, refs)
		}
	}
	return refs
}
