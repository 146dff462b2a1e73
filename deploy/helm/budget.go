package helm

import (
	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
)

type (
	appsv1Deployment = appsv1.Deployment
	policySpec       = policyv1.PodDisruptionBudgetSpec
)

// budget reports whether a PodDisruptionBudget that selects pods holds ok.
func (c *checker) budget(pods map[string]string, ok func(policySpec) bool) bool {
	for _, p := range c.o.PDBs {
		sel, err := labels.ValidatedSelectorFromSet(p.Spec.Selector.MatchLabels)
		if err == nil && sel.Matches(labels.Set(pods)) && ok(p.Spec) {
			return true
		}
	}
	return false
}
