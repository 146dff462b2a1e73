// Package helm renders gatehouse's Helm chart (deploy/helm/gatehouse) with
// Helm's Go SDK, without a cluster, decodes every object strictly into the
// Kubernetes API types and checks the invariants the deployment relies on
// (Check). It also writes what is generated from other sources (Generated):
// the chart's copies of the promtool-tested alert rules and of the Grafana
// dashboard, and deploy/k8s/gatehouse.yaml, the chart rendered with
// examples/values-production.yaml for `kubectl apply -k deploy/k8s`.
package helm

//go:generate go run ./helmgen
