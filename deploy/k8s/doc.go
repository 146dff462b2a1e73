// Package k8s holds gatehouse's Kubernetes manifests (a kustomize base and
// a production overlay) and the test that renders them with kustomize's Go
// API and decodes every object strictly into the Kubernetes API types, so a
// misspelled or unknown field fails `make test`, then checks the
// invariants the deployment relies on.
package k8s
