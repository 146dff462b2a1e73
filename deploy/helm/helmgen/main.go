// Command helmgen writes the files generated for the Helm chart and
// deploy/k8s (helm.Generated): the chart's copies of the alert rules and
// the dashboard, and deploy/k8s/gatehouse.yaml rendered from the chart.
// Run it with `go generate ./deploy/helm`; deploy/helm's test fails when
// a file is stale.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gatehouse/gatehouse/deploy/helm"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "helmgen:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := helm.RepoRoot()
	if err != nil {
		return err
	}
	files, err := helm.Generated(root)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(root, helm.Chart, "files")); err != nil {
		return err
	}
	var errs []error
	for name, b := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		errs = append(errs, os.WriteFile(p, b, 0o644))
	}
	return errors.Join(errs...)
}
