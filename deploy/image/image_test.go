package main

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImage builds the image as `make image` does, opens both outputs with
// go-containerregistry, checks the configuration and the filesystem, and
// runs the binary taken out of the layer.
func TestImage(t *testing.T) {
	out := t.TempDir()
	res, err := build(context.Background(), options{repoRoot: "../..", out: out, tag: "gatehouse:test", source: "https://example.test/gatehouse", certs: hostCerts})
	if err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(filepath.Join(out, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("OCI layout index: %v %v", im, err)
	}
	fromLayout, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	fromTar, err := tarball.ImageFromPath(filepath.Join(out, "gatehouse.tar"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, img := range map[string]v1.Image{"layout": fromLayout, "tarball": fromTar} {
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if name == "layout" && d.String() != res.digest {
			t.Errorf("layout digest %s, built %s", d, res.digest)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/gatehouse"}) || !slices.Equal(c.Cmd, []string{"serve"}) {
			t.Errorf("%s: user %q entrypoint %v cmd %v", name, c.User, c.Entrypoint, c.Cmd)
		}
		for _, p := range []string{"8080/tcp", "9090/tcp"} {
			if _, ok := c.ExposedPorts[p]; !ok {
				t.Errorf("%s: port %s not exposed: %v", name, p, c.ExposedPorts)
			}
		}
		for k, want := range map[string]string{"org.opencontainers.image.source": "https://example.test/gatehouse",
			"org.opencontainers.image.revision": res.revision, "org.opencontainers.image.version": res.version} {
			if c.Labels[k] != want || want == "" {
				t.Errorf("%s: label %s = %q, want %q", name, k, c.Labels[k], want)
			}
		}
		if cf.OS != "linux" {
			t.Errorf("%s: os %q", name, cf.OS)
		}
	}

	// The filesystem: no shell, the user database, the certificates, and a
	// binary that runs.
	layers, err := fromLayout.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]*tar.Header{}
	bin := filepath.Join(t.TempDir(), "gatehouse")
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = h
		if h.Name == binPath {
			f, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"} {
		if files[shell] != nil {
			t.Errorf("the image holds a shell: %s", shell)
		}
	}
	for _, p := range []string{"etc/passwd", "etc/group", certsPath, binPath} {
		if files[p] == nil {
			t.Errorf("%s missing from the layer", p)
		}
	}
	if h := files["tmp"]; h == nil || h.Mode&0o1777 != 0o1777 {
		t.Errorf("/tmp missing or not 1777: %+v", h)
	}
	out2, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out2), "gatehouse ") || !strings.Contains(string(out2), res.revision) {
		t.Fatalf("gatehouse version from the image: %v %q (revision %s)", err, out2, res.revision)
	}
	t.Logf("%s %s: %s", res.ref, res.digest, strings.TrimSpace(string(out2)))
}
