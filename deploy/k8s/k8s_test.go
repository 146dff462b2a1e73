package k8s

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/deploy/helm"
)

// TestManifests: the kustomization builds, every object decodes strictly,
// and the deployment's invariants hold, the admin listener closed to all
// but the monitoring namespace among them (issue 45).
func TestManifests(t *testing.T) {
	o, err := Render(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range helm.Check(o, helm.Expect{MonitoringNamespace: "monitoring", RelayReplicas: 2}) {
		t.Error(err)
	}
	if len(o.NetworkPolicies) != 1 {
		t.Errorf("want the NetworkPolicy, got %d", len(o.NetworkPolicies))
	}
	if len(o.ServiceMonitors)+len(o.PrometheusRules) > 0 {
		t.Error("objects of the Prometheus Operator's kinds, which kubectl refuses without its CRDs")
	}
}

// TestMisspelledFieldFails: a field the API does not have fails the
// build, naming the object and the field.
func TestMisspelledFieldFails(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"kustomization.yaml", "gatehouse.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if f == "gatehouse.yaml" {
			i := strings.Index(string(b), "kind: Deployment\nmetadata:\n  name: gatehouse-relay\n")
			j := strings.Index(string(b[i:]), "terminationGracePeriodSeconds:")
			if i < 0 || j < 0 {
				t.Fatal("no relay Deployment with a terminationGracePeriodSeconds")
			}
			b = []byte(string(b[:i+j]) + strings.Replace(string(b[i+j:]), "terminationGracePeriodSeconds:", "terminationGracePeriodSecond:", 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Render(dir)
	if err == nil || !strings.Contains(err.Error(), "gatehouse-relay") || !strings.Contains(err.Error(), "terminationGracePeriodSecond") {
		t.Fatalf("a misspelled field must fail naming the object and the field, got %v", err)
	}
}
