package helm

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/loader"
	"helm.sh/helm/v4/pkg/cli/values"
	"helm.sh/helm/v4/pkg/getter"
	release "helm.sh/helm/v4/pkg/release/v1"
)

// Release and Namespace are the names the tests and the generated
// deploy/k8s render with.
const (
	Release   = "gatehouse"
	Namespace = "gatehouse"
)

// Rendered is a chart rendered as `helm install` would create it.
type Rendered struct {
	// Manifest is the release's objects; Hooks the hooks' manifests, in
	// the order Helm runs them (by weight).
	Manifest string
	Hooks    []string
	Objects  *Objects
}

// Render renders chartDir as `helm install --dry-run=client` does, with
// valueFiles merged in order and then set (may be nil), validating the
// values against the chart's values.schema.json; then decodes every
// object strictly. Errors name the file, the object or the value at fault.
func Render(chartDir string, valueFiles []string, set map[string]any) (*Rendered, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	vals, err := (&values.Options{ValueFiles: valueFiles}).MergeValues(getter.Providers{})
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	vals = merge(vals, set)
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(io.Discard, nil)))
	inst := action.NewInstall(cfg)
	inst.DryRunStrategy = action.DryRunClient
	inst.Replace = true
	inst.ReleaseName = Release
	inst.Namespace = Namespace
	r, err := inst.Run(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("helm install --dry-run: %w", err)
	}
	rel, ok := r.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("helm install --dry-run: release of type %T", r)
	}
	out := &Rendered{Manifest: strings.TrimSpace(rel.Manifest)}
	docs := []string{out.Manifest}
	for _, h := range rel.Hooks { // already sorted by weight, then name
		out.Hooks = append(out.Hooks, strings.TrimSpace(h.Manifest))
		docs = append(docs, h.Manifest)
	}
	out.Objects, err = Decode(strings.Join(docs, "\n---\n"))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// YAML is the rendered objects as one stream: the release's objects, then
// its hooks, as `helm template` prints them.
func (r *Rendered) YAML() string {
	var b strings.Builder
	b.WriteString(r.Manifest)
	b.WriteString("\n")
	for _, h := range r.Hooks {
		b.WriteString("---\n")
		b.WriteString(h)
		b.WriteString("\n")
	}
	return b.String()
}

// merge sets src's values into dst, maps merged key by key.
func merge(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		if m, ok := v.(map[string]any); ok {
			if d, ok := dst[k].(map[string]any); ok {
				dst[k] = merge(d, m)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}
