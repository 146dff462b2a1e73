package k8s

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gatehouse/gatehouse/deploy/helm"
)

// Render builds the kustomization in dir and decodes every object strictly
// (helm.Decode): an unknown field, a misspelled one or a kind this
// deployment does not use is an error naming the object and the field.
func Render(dir string) (*helm.Objects, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	docs := make([]string, 0, len(rm.Resources()))
	for _, r := range rm.Resources() {
		raw, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		docs = append(docs, string(raw))
	}
	o, err := helm.Decode(strings.Join(docs, "\n---\n"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return o, nil
}
