package k8s

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gatehouse/gatehouse/internal/config"
)

// secretKeys are the keys of the Secret `gatehouse` docs/DEPLOYMENT.md tells operators
// to create; the configuration may reference no other.
var secretKeys = []string{"database-url", "stripe-webhook-secret", "stripe-api-key"}

func TestManifests(t *testing.T) {
	for _, dir := range []string{"base", "overlays/production"} {
		t.Run(dir, func(t *testing.T) {
			o, err := Render(dir)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, o)
		})
	}
}

func checkInvariants(t *testing.T, o *Objects) {
	t.Helper()
	for _, name := range []string{"gatehouse-serve", "gatehouse-relay", "gatehouse-consume"} {
		if o.Deployments[name] == nil {
			t.Fatalf("Deployment %s missing", name)
		}
	}
	if len(o.Jobs) != 1 {
		t.Fatalf("want one migration Job, got %d", len(o.Jobs))
	}
	var cm *corev1.ConfigMap
	for name, c := range o.ConfigMaps {
		if strings.HasPrefix(name, "gatehouse-config") {
			cm = c
		}
	}
	if cm == nil {
		t.Fatal("ConfigMap gatehouse-config missing")
	}
	cfg := parseConfig(t, cm.Data["gatehouse.yaml"])

	pods := map[string]corev1.PodTemplateSpec{}
	for name, d := range o.Deployments {
		pods[name] = d.Spec.Template
		sel, err := metaSelector(d.Spec.Selector.MatchLabels)
		if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("%s: selector %v does not match its pods %v", name, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
		}
	}
	for name, j := range o.Jobs {
		pods["job/"+name] = j.Spec.Template
	}
	for name, p := range pods {
		checkPod(t, name, p, cm.Name)
	}

	serve := o.Deployments["gatehouse-serve"]
	if *serve.Spec.Replicas < 2 {
		t.Errorf("serve: %d replicas, want at least 2", *serve.Spec.Replicas)
	}
	c := serve.Spec.Template.Spec.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
		c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("serve: readiness /readyz and liveness /healthz required")
	}
	if r := *o.Deployments["gatehouse-relay"].Spec.Replicas; r != 2 {
		t.Errorf("relay: %d replicas, want 2 (one active, one standby)", r)
	}
	if r := *o.Deployments["gatehouse-consume"].Spec.Replicas; r > cfg.Kafka.Partitions {
		t.Errorf("consume: %d replicas for %d partitions", r, cfg.Kafka.Partitions)
	}
	grace := o.Deployments["gatehouse-consume"].Spec.Template.Spec.TerminationGracePeriodSeconds
	if grace == nil || float64(*grace) <= cfg.Consumers.DrainTimeout.Seconds() {
		t.Errorf("consume: terminationGracePeriodSeconds %v must exceed consumers.drain_timeout %v", grace, cfg.Consumers.DrainTimeout)
	}

	servePods := labels.Set(serve.Spec.Template.Labels)
	if len(o.PDBs) == 0 || len(o.HPAs) == 0 {
		t.Fatal("serve needs a PodDisruptionBudget and a HorizontalPodAutoscaler")
	}
	for name, p := range o.PDBs {
		sel, err := metaSelector(p.Spec.Selector.MatchLabels)
		if err != nil || !sel.Matches(servePods) {
			t.Errorf("PodDisruptionBudget %s does not select serve's pods", name)
		}
	}
	for name, h := range o.HPAs {
		if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != serve.Name || len(h.Spec.Metrics) == 0 ||
			h.Spec.Metrics[0].Resource == nil || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU {
			t.Errorf("HorizontalPodAutoscaler %s must scale %s on CPU: %+v", name, serve.Name, h.Spec)
		}
	}
	for name, s := range o.Services {
		sel, _ := metaSelector(s.Spec.Selector)
		matched := false
		for _, p := range pods {
			if sel.Matches(labels.Set(p.Labels)) {
				matched = true
				for _, port := range s.Spec.Ports {
					if !hasPort(p, port.TargetPort.StrVal) {
						t.Errorf("Service %s: target port %q not on its pods", name, port.TargetPort.StrVal)
					}
				}
			}
		}
		if !matched || len(s.Spec.Selector) == 0 {
			t.Errorf("Service %s selects no pod", name)
		}
	}
}

// checkPod: non-root, read-only root filesystem, no privilege escalation,
// no capabilities, resources, and volumes from the ConfigMap and the
// documented Secret only.
func checkPod(t *testing.T, name string, p corev1.PodTemplateSpec, configMap string) {
	t.Helper()
	sc := p.Spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod must run as non-root with the RuntimeDefault seccomp profile", name)
	}
	for _, c := range p.Spec.Containers {
		cs := c.SecurityContext
		if cs == nil || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem ||
			cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation ||
			cs.Capabilities == nil || len(cs.Capabilities.Drop) != 1 || cs.Capabilities.Drop[0] != "ALL" {
			t.Errorf("%s/%s: read-only root filesystem, no privilege escalation, capabilities drop ALL", name, c.Name)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s/%s: resource requests and a memory limit required", name, c.Name)
		}
	}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.ConfigMap != nil && v.ConfigMap.Name != configMap:
			t.Errorf("%s: volume %s references ConfigMap %s, not %s", name, v.Name, v.ConfigMap.Name, configMap)
		case v.Secret != nil && v.Secret.SecretName != "gatehouse":
			t.Errorf("%s: volume %s references Secret %s (only the documented `gatehouse`)", name, v.Name, v.Secret.SecretName)
		}
	}
}

func hasPort(p corev1.PodTemplateSpec, name string) bool {
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == name {
				return true
			}
		}
	}
	return false
}

func metaSelector(m map[string]string) (labels.Selector, error) {
	return labels.ValidatedSelectorFromSet(m)
}

// parseConfig parses the ConfigMap's gatehouse.yaml with gatehouse's own
// parser, with the Secret's files stood in for by temporary ones: every
// file: reference must name a documented key of the Secret.
func parseConfig(t *testing.T, yml string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	ref := regexp.MustCompile(`file:/etc/gatehouse/secrets/([A-Za-z0-9._-]+)`)
	for _, m := range ref.FindAllStringSubmatch(yml, -1) {
		known := false
		for _, k := range secretKeys {
			known = known || k == m[1]
		}
		if !known {
			t.Errorf("gatehouse.yaml references Secret key %q, not in the documented %v", m[1], secretKeys)
		}
	}
	for _, k := range secretKeys {
		if err := os.WriteFile(filepath.Join(dir, k), []byte("postgres://u@db/gatehouse\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	yml = strings.ReplaceAll(yml, "file:/etc/gatehouse/secrets/", "file:"+dir+"/")
	cfg, err := config.Parse([]byte(yml), func(string) string { return "" })
	if err != nil {
		t.Fatalf("the ConfigMap's gatehouse.yaml: %v", err)
	}
	if err := cfg.RequireDatabase(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestMisspelledFieldFails: a field the API does not have fails rendering,
// naming the object and the field.
func TestMisspelledFieldFails(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"kustomization.yaml", "gatehouse.yaml", "migrate.yaml", "serve.yaml", "relay.yaml", "consume.yaml"} {
		b, err := os.ReadFile(filepath.Join("base", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "relay.yaml" {
			b = []byte(strings.Replace(string(b), "terminationGracePeriodSeconds:", "terminationGracePeriodSecond:", 1))
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
