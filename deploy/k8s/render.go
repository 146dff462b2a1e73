package k8s

import (
	"bytes"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Objects is a rendered kustomization, decoded by kind.
type Objects struct {
	Deployments map[string]*appsv1.Deployment
	Services    map[string]*corev1.Service
	ConfigMaps  map[string]*corev1.ConfigMap
	Jobs        map[string]*batchv1.Job
	PDBs        map[string]*policyv1.PodDisruptionBudget
	HPAs        map[string]*autoscalingv2.HorizontalPodAutoscaler
}

// Render builds the kustomization in dir and decodes every object strictly:
// an unknown field, a misspelled one or a kind this deployment does not
// use is an error naming the object and the field.
func Render(dir string) (*Objects, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	o := &Objects{Deployments: map[string]*appsv1.Deployment{}, Services: map[string]*corev1.Service{},
		ConfigMaps: map[string]*corev1.ConfigMap{}, Jobs: map[string]*batchv1.Job{},
		PDBs: map[string]*policyv1.PodDisruptionBudget{}, HPAs: map[string]*autoscalingv2.HorizontalPodAutoscaler{}}
	for _, r := range rm.Resources() {
		raw, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		kind, name := r.GetKind(), r.GetName()
		var dst any
		switch kind {
		case "Deployment":
			d := &appsv1.Deployment{}
			o.Deployments[name], dst = d, d
		case "Service":
			s := &corev1.Service{}
			o.Services[name], dst = s, s
		case "ConfigMap":
			c := &corev1.ConfigMap{}
			o.ConfigMaps[name], dst = c, c
		case "Job":
			j := &batchv1.Job{}
			o.Jobs[name], dst = j, j
		case "PodDisruptionBudget":
			p := &policyv1.PodDisruptionBudget{}
			o.PDBs[name], dst = p, p
		case "HorizontalPodAutoscaler":
			h := &autoscalingv2.HorizontalPodAutoscaler{}
			o.HPAs[name], dst = h, h
		default:
			return nil, fmt.Errorf("%s: %s/%s: kind not expected in gatehouse's manifests", dir, kind, name)
		}
		if err := yaml.UnmarshalStrict(bytes.TrimSpace(raw), dst); err != nil {
			return nil, fmt.Errorf("%s: %s/%s: %w", dir, kind, name, err)
		}
	}
	return o, nil
}
