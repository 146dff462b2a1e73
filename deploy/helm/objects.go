package helm

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// Objects is a rendered set of manifests, decoded by kind and keyed by name.
type Objects struct {
	Deployments     map[string]*appsv1.Deployment
	Services        map[string]*corev1.Service
	ConfigMaps      map[string]*corev1.ConfigMap
	Jobs            map[string]*batchv1.Job
	PDBs            map[string]*policyv1.PodDisruptionBudget
	HPAs            map[string]*autoscalingv2.HorizontalPodAutoscaler
	NetworkPolicies map[string]*networkingv1.NetworkPolicy
	ServiceMonitors map[string]*monitoringv1.ServiceMonitor
	PrometheusRules map[string]*monitoringv1.PrometheusRule
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// Decode splits a YAML stream into objects and decodes each strictly: an
// unknown or misspelled field, a kind gatehouse's manifests do not use, or
// two objects of one kind and name is an error naming the object.
func Decode(stream string) (*Objects, error) {
	o := &Objects{Deployments: map[string]*appsv1.Deployment{}, Services: map[string]*corev1.Service{},
		ConfigMaps: map[string]*corev1.ConfigMap{}, Jobs: map[string]*batchv1.Job{},
		PDBs: map[string]*policyv1.PodDisruptionBudget{}, HPAs: map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		NetworkPolicies: map[string]*networkingv1.NetworkPolicy{}, ServiceMonitors: map[string]*monitoringv1.ServiceMonitor{},
		PrometheusRules: map[string]*monitoringv1.PrometheusRule{}}
	for _, doc := range docSeparator.Split(stream, -1) {
		raw := bytes.TrimSpace([]byte(doc))
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("decode: %w\n%s", err, doc)
		}
		if head.Kind == "" && onlyComments(doc) {
			continue
		}
		dst, err := o.slot(head.Kind, head.Metadata.Name)
		if err != nil {
			return nil, err
		}
		if err := yaml.UnmarshalStrict(raw, dst); err != nil {
			return nil, fmt.Errorf("%s/%s: %w", head.Kind, head.Metadata.Name, err)
		}
	}
	return o, nil
}

func onlyComments(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// slot is a new object of kind, registered under name.
func (o *Objects) slot(kind, name string) (any, error) {
	if name == "" {
		return nil, fmt.Errorf("%s without a name", kind)
	}
	var exists bool
	var dst any
	switch kind {
	case "Deployment":
		dst, exists = put(o.Deployments, name, &appsv1.Deployment{})
	case "Service":
		dst, exists = put(o.Services, name, &corev1.Service{})
	case "ConfigMap":
		dst, exists = put(o.ConfigMaps, name, &corev1.ConfigMap{})
	case "Job":
		dst, exists = put(o.Jobs, name, &batchv1.Job{})
	case "PodDisruptionBudget":
		dst, exists = put(o.PDBs, name, &policyv1.PodDisruptionBudget{})
	case "HorizontalPodAutoscaler":
		dst, exists = put(o.HPAs, name, &autoscalingv2.HorizontalPodAutoscaler{})
	case "NetworkPolicy":
		dst, exists = put(o.NetworkPolicies, name, &networkingv1.NetworkPolicy{})
	case "ServiceMonitor":
		dst, exists = put(o.ServiceMonitors, name, &monitoringv1.ServiceMonitor{})
	case "PrometheusRule":
		dst, exists = put(o.PrometheusRules, name, &monitoringv1.PrometheusRule{})
	default:
		return nil, fmt.Errorf("%s/%s: kind not expected in gatehouse's manifests", kind, name)
	}
	if exists {
		return nil, fmt.Errorf("%s/%s: rendered twice", kind, name)
	}
	return dst, nil
}

func put[T any](m map[string]*T, name string, v *T) (*T, bool) {
	_, exists := m[name]
	m[name] = v
	return v, exists
}
