package helm

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Expect is what Check holds the rendered objects to.
type Expect struct {
	// MonitoringNamespace is the only namespace admitted to the admin
	// listener; "" when no NetworkPolicy is expected.
	MonitoringNamespace string
	// RelayReplicas is the relay Deployment's replicas: 2 is one active
	// relay and its standby.
	RelayReplicas int32
}

// Check returns every invariant of gatehouse's deployment the objects
// break: the stages and their probes, security contexts and resources, one
// relay leader and its standby, the migration as a hook before the stages,
// every secret reference provided by a Secret named in the pods, the admin
// listener closed by the NetworkPolicy, and the Services, the autoscaler,
// the disruption budgets and the ServiceMonitor selecting what they should.
func Check(o *Objects, want Expect) []error {
	c := &checker{o: o}
	stages := map[string]*corev1.PodTemplateSpec{}
	for _, comp := range []string{"serve", "relay", "consume"} {
		d := o.deployment(comp)
		if d == nil {
			c.errorf("no Deployment of component %s", comp)
			continue
		}
		stages[comp] = &d.Spec.Template
		if sel, err := labels.ValidatedSelectorFromSet(d.Spec.Selector.MatchLabels); err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			c.errorf("Deployment %s: selector %v does not match its pods", d.Name, d.Spec.Selector.MatchLabels)
		}
		c.hook(d.Name, d.Annotations, false)
		c.pod("Deployment "+d.Name, d.Spec.Template, true)
	}
	if len(c.errs) > 0 {
		return c.errs
	}
	c.relay(want.RelayReplicas)
	c.migration()
	c.serve()
	c.services(stages)
	c.networkPolicy(stages, want.MonitoringNamespace)
	c.monitoring()
	return c.errs
}

type checker struct {
	o    *Objects
	errs []error
}

func (c *checker) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// hook checks an object is (want) or is not a pre-install/pre-upgrade hook.
func (c *checker) hook(name string, ann map[string]string, want bool) {
	h := ann["helm.sh/hook"]
	switch {
	case want && h != "pre-install,pre-upgrade":
		c.errorf("%s: helm.sh/hook %q, want pre-install,pre-upgrade (before the stages)", name, h)
	case !want && h != "":
		c.errorf("%s: a stage's object is a hook (%q)", name, h)
	}
}

func (o *Objects) deployment(component string) *appsv1Deployment {
	for _, d := range o.Deployments {
		if d.Spec.Template.Labels["app.kubernetes.io/component"] == component {
			return d
		}
	}
	return nil
}

// pod: non-root, RuntimeDefault seccomp, read-only root filesystem, no
// privilege escalation, all capabilities dropped, resources; with probes,
// readiness on /readyz and liveness on /healthz on the admin port.
func (c *checker) pod(name string, p corev1.PodTemplateSpec, probes bool) {
	sc := p.Spec.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		c.errorf("%s: the pod must run as non-root with the RuntimeDefault seccomp profile", name)
	}
	if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
		c.errorf("%s: a service account token is mounted (gatehouse does not use the Kubernetes API)", name)
	}
	if len(p.Spec.InitContainers) > 0 {
		c.errorf("%s: unexpected init containers", name)
	}
	for _, ct := range p.Spec.Containers {
		cs := ct.SecurityContext
		if cs == nil || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem ||
			cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation || (cs.Privileged != nil && *cs.Privileged) ||
			cs.Capabilities == nil || len(cs.Capabilities.Drop) != 1 || cs.Capabilities.Drop[0] != "ALL" || len(cs.Capabilities.Add) > 0 {
			c.errorf("%s/%s: read-only root filesystem, no privilege escalation, capabilities drop ALL", name, ct.Name)
		}
		if ct.Resources.Requests.Cpu().IsZero() || ct.Resources.Requests.Memory().IsZero() || ct.Resources.Limits.Memory().IsZero() {
			c.errorf("%s/%s: CPU and memory requests and a memory limit required", name, ct.Name)
		}
		if probes && (!probe(ct.ReadinessProbe, "/readyz") || !probe(ct.LivenessProbe, "/healthz") || !hasPort(ct, "admin")) {
			c.errorf("%s/%s: readiness on /readyz and liveness on /healthz at the admin port required", name, ct.Name)
		}
	}
	c.secrets(name, p)
}

func probe(p *corev1.Probe, path string) bool {
	return p != nil && p.HTTPGet != nil && p.HTTPGet.Path == path && p.HTTPGet.Port.StrVal == "admin"
}

func hasPort(ct corev1.Container, name string) bool {
	for _, p := range ct.Ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

var secretRef = regexp.MustCompile(`\b(file|env):[^\s"']+`)

// secrets: every file: and env: reference of the pod's configuration is a
// Secret's key mounted or set by secretKeyRef in every container, and
// each Secret is named.
func (c *checker) secrets(name string, p corev1.PodTemplateSpec) {
	mounts := map[string]string{} // volume name → Secret
	var cfg string
	for _, v := range p.Spec.Volumes {
		switch {
		case v.Secret != nil:
			if v.Secret.SecretName == "" {
				c.errorf("%s: volume %s mounts a Secret without a name", name, v.Name)
			}
			mounts[v.Name] = v.Secret.SecretName
		case v.ConfigMap != nil && v.Name == "config":
			if cm := c.o.ConfigMaps[v.ConfigMap.Name]; cm != nil {
				cfg = cm.Data["gatehouse.yaml"]
			} else {
				c.errorf("%s: ConfigMap %s is not rendered", name, v.ConfigMap.Name)
			}
		case v.EmptyDir == nil:
			c.errorf("%s: volume %s is neither the configuration, a Secret nor scratch space", name, v.Name)
		}
	}
	if cfg == "" {
		c.errorf("%s: no configuration mounted", name)
	}
	for _, ct := range p.Spec.Containers {
		env := map[string]bool{}
		for _, e := range ct.Env {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name == "" {
				c.errorf("%s/%s: env %s is not a key of a named Secret", name, ct.Name, e.Name)
			}
			env[e.Name] = true
		}
		for _, ref := range secretRef.FindAllString(cfg, -1) {
			kind, target, _ := strings.Cut(ref, ":")
			ok := env[target]
			if kind == "file" {
				ok = false
				for _, m := range ct.VolumeMounts {
					if mounts[m.Name] != "" && strings.HasPrefix(target, strings.TrimSuffix(m.MountPath, "/")+"/") {
						ok = true
					}
				}
			}
			if !ok {
				c.errorf("%s/%s: the configuration refers to %s, which no named Secret provides", name, ct.Name, ref)
			}
		}
	}
}

// relay: one active relay and its standby, never autoscaled, a budget
// that keeps one through a drain.
func (c *checker) relay(want int32) {
	d := c.o.deployment("relay")
	if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
		c.errorf("relay: replicas %v, want %d (one active by the relay lock, one standby)", d.Spec.Replicas, want)
	}
	for name, h := range c.o.HPAs {
		if h.Spec.ScaleTargetRef.Name == d.Name {
			c.errorf("HorizontalPodAutoscaler %s scales the relay: more relays add no throughput", name)
		}
	}
	if want > 1 && !c.budget(d.Spec.Template.Labels, func(p policySpec) bool { return p.MaxUnavailable != nil && p.MaxUnavailable.IntValue() == 1 }) {
		c.errorf("relay: no PodDisruptionBudget with maxUnavailable 1 (a drain must keep the standby)")
	}
}

// migration: one Job, a pre-install/pre-upgrade hook, reading a
// configuration that is itself a hook of a lower weight.
func (c *checker) migration() {
	if len(c.o.Jobs) != 1 {
		c.errorf("want one migration Job, got %d", len(c.o.Jobs))
		return
	}
	for name, j := range c.o.Jobs {
		c.hook("Job "+name, j.Annotations, true)
		c.pod("Job "+name, j.Spec.Template, false)
		if args := j.Spec.Template.Spec.Containers[0].Args; len(args) == 0 || args[0] != "migrate" {
			c.errorf("Job %s runs %v, not gatehouse migrate", name, args)
		}
		for _, v := range j.Spec.Template.Spec.Volumes {
			if v.ConfigMap == nil {
				continue
			}
			cm := c.o.ConfigMaps[v.ConfigMap.Name]
			if cm == nil {
				continue
			}
			c.hook("ConfigMap "+cm.Name, cm.Annotations, true)
			if weight(cm.Annotations) >= weight(j.Annotations) {
				c.errorf("ConfigMap %s: hook weight %q must be below the Job's %q", cm.Name, cm.Annotations["helm.sh/hook-weight"], j.Annotations["helm.sh/hook-weight"])
			}
		}
	}
	for name, cm := range c.o.ConfigMaps {
		if cm.Labels["app.kubernetes.io/component"] != "migrate" {
			c.hook("ConfigMap "+name, cm.Annotations, false)
		}
	}
	for name, s := range c.o.Services {
		c.hook("Service "+name, s.Annotations, false)
	}
}

func weight(ann map[string]string) int {
	var w int
	fmt.Sscan(ann["helm.sh/hook-weight"], &w)
	return w
}

// serve: an autoscaler on CPU and a disruption budget.
func (c *checker) serve() {
	d := c.o.deployment("serve")
	if !c.budget(d.Spec.Template.Labels, func(p policySpec) bool { return p.MinAvailable != nil && p.MinAvailable.IntValue() >= 1 }) {
		c.errorf("serve: no PodDisruptionBudget with minAvailable >= 1 selects its pods")
	}
	found := false
	for name, h := range c.o.HPAs {
		if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != d.Name || len(h.Spec.Metrics) == 0 ||
			h.Spec.Metrics[0].Resource == nil || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU || h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 {
			c.errorf("HorizontalPodAutoscaler %s must scale %s on CPU from at least 2 replicas", name, d.Name)
		}
		found = true
	}
	if !found && (d.Spec.Replicas == nil || *d.Spec.Replicas < 2) {
		c.errorf("serve: neither an autoscaler nor 2 replicas")
	}
}

// services: each selects pods that have its target ports.
func (c *checker) services(stages map[string]*corev1.PodTemplateSpec) {
	for name, s := range c.o.Services {
		sel, err := labels.ValidatedSelectorFromSet(s.Spec.Selector)
		matched := 0
		for _, p := range stages {
			if err != nil || len(s.Spec.Selector) == 0 || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			matched++
			for _, port := range s.Spec.Ports {
				if !hasPort(p.Spec.Containers[0], port.TargetPort.StrVal) {
					c.errorf("Service %s: target port %q not on its pods", name, port.TargetPort.StrVal)
				}
			}
		}
		if matched != 1 {
			c.errorf("Service %s selects the pods of %d stages, want 1", name, matched)
		}
	}
}

// networkPolicy: every pod selected; the admin port admitted only from
// the monitoring namespace; only the public port from anywhere.
func (c *checker) networkPolicy(stages map[string]*corev1.PodTemplateSpec, monitoring string) {
	if monitoring == "" {
		if len(c.o.NetworkPolicies) > 0 {
			c.errorf("a NetworkPolicy is rendered though none is expected")
		}
		return
	}
	if len(c.o.NetworkPolicies) != 1 {
		c.errorf("want one NetworkPolicy, got %d", len(c.o.NetworkPolicies))
		return
	}
	for name, np := range c.o.NetworkPolicies {
		sel, err := labels.ValidatedSelectorFromSet(np.Spec.PodSelector.MatchLabels)
		for comp, p := range stages {
			if err != nil || len(np.Spec.PodSelector.MatchExpressions) > 0 || !sel.Matches(labels.Set(p.Labels)) {
				c.errorf("NetworkPolicy %s does not select %s's pods", name, comp)
			}
		}
		if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
			c.errorf("NetworkPolicy %s: policyTypes %v, want [Ingress]", name, np.Spec.PolicyTypes)
		}
		admin := false
		for i, r := range np.Spec.Ingress {
			ports := map[string]bool{}
			for _, p := range r.Ports {
				ports[p.Port.String()] = true
			}
			if len(r.Ports) == 0 || !(len(ports) == 1 && (ports["http"] || ports["admin"])) {
				c.errorf("NetworkPolicy %s: rule %d admits ports %v: each rule must name one port, http or admin", name, i, ports)
				continue
			}
			if ports["http"] {
				continue // the public listener: from anywhere
			}
			admin = true
			if len(r.From) == 0 {
				c.errorf("NetworkPolicy %s: rule %d admits the admin port from anywhere", name, i)
			}
			for _, peer := range r.From {
				if peer.IPBlock != nil || peer.NamespaceSelector == nil || len(peer.NamespaceSelector.MatchExpressions) > 0 ||
					len(peer.NamespaceSelector.MatchLabels) != 1 || peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != monitoring {
					c.errorf("NetworkPolicy %s: rule %d admits the admin port from %+v, not only namespace %s", name, i, peer, monitoring)
				}
			}
		}
		if !admin {
			c.errorf("NetworkPolicy %s admits no scraper to the admin port", name)
		}
	}
}

// monitoring: the ServiceMonitor scrapes every admin Service under the
// job names the rules use; the dashboard carries the sidecar's label.
func (c *checker) monitoring() {
	for name, sm := range c.o.ServiceMonitors {
		sel, err := labels.ValidatedSelectorFromSet(sm.Spec.Selector.MatchLabels)
		for _, comp := range []string{"serve", "relay", "consume"} {
			n := 0
			for _, s := range c.o.Services {
				if err == nil && sel.Matches(labels.Set(s.Labels)) && s.Labels["app.kubernetes.io/component"] == comp {
					n++
					if s.Labels[sm.Spec.JobLabel] != "gatehouse-"+comp || len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != "admin" {
						c.errorf("ServiceMonitor %s: Service %s is not scraped as job gatehouse-%s on its admin port", name, s.Name, comp)
					}
				}
			}
			if n != 1 {
				c.errorf("ServiceMonitor %s selects %d Services of %s, want its admin Service", name, n, comp)
			}
		}
		if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "admin" || sm.Spec.Endpoints[0].Path != "/metrics" {
			c.errorf("ServiceMonitor %s: want one endpoint, port admin, path /metrics", name)
		}
	}
	for name, cm := range c.o.ConfigMaps {
		if _, ok := cm.Data["gatehouse.json"]; ok && cm.Labels["grafana_dashboard"] != "1" {
			c.errorf("ConfigMap %s: the dashboard without the label grafana_dashboard: \"1\"", name)
		}
	}
}
