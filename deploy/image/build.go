package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	release "github.com/gatehouse/gatehouse/internal/version"
)

// hostCerts is where Debian-like hosts keep the CA bundle copied into the image.
const hostCerts = "/etc/ssl/certs/ca-certificates.crt"

// Where things are in the image.
const (
	binPath   = "usr/local/bin/gatehouse"
	certsPath = "etc/ssl/certs/ca-certificates.crt"
	nonroot   = "65532"
)

type options struct {
	repoRoot string // the module root (go build runs there)
	out      string
	tag      string
	source   string
	certs    string // CA bundle to copy
}

type result struct {
	ref, digest, revision, version, tarball string
	image                                   v1.Image
}

// build compiles gatehouse and writes the image; errors name what failed.
func build(ctx context.Context, o options) (*result, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, errors.New("the Go toolchain (go) is not on PATH: it compiles the binary")
	}
	certs, err := os.ReadFile(o.certs)
	if err != nil {
		return nil, fmt.Errorf("CA certificates %s: %w (install ca-certificates)", o.certs, err)
	}
	work, err := os.MkdirTemp("", "gatehouse-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "gatehouse")
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-buildvcs=auto", "-ldflags=-s -w", "-o", bin, "./cmd/gatehouse")
	cmd.Dir = o.repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/gatehouse (CGO_ENABLED=0): %w\n%s(the module proxy must be reachable for missing modules)", err, out)
	}
	version, revision, created, err := stamp(bin)
	if err != nil {
		return nil, err
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	layerTar, err := rootfs(binary, certs, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", runtime.GOARCH, v1.Time{Time: created}
	cf.Config = v1.Config{
		User:         nonroot + ":" + nonroot,
		Entrypoint:   []string{"/" + binPath},
		Cmd:          []string{"serve"},
		WorkingDir:   "/",
		Env:          []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=/" + certsPath},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}, "9090/tcp": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "gatehouse",
			"org.opencontainers.image.description": "Webhook receiver and sign-in service: verified webhooks recorded once in PostgreSQL, relayed to Kafka, processed idempotently.",
			"org.opencontainers.image.source":      o.source,
			"org.opencontainers.image.revision":    revision,
			"org.opencontainers.image.version":     version,
			"org.opencontainers.image.created":     created.Format(time.RFC3339),
		},
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	tag := o.tag
	if tag == "" {
		tag = "gatehouse:" + strings.NewReplacer("+", "-", "(", "", ")", "").Replace(version)
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return nil, fmt.Errorf("-tag %q: %w", tag, err)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	ociDir := filepath.Join(o.out, "oci")
	_ = os.RemoveAll(ociDir)
	lp, err := layout.Write(ociDir, empty.Index)
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", ociDir, err)
	}
	if err := lp.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.TagStr()})); err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", ociDir, err)
	}
	tarPath := filepath.Join(o.out, "gatehouse.tar")
	if err := tarball.WriteToFile(tarPath, ref, img); err != nil {
		return nil, fmt.Errorf("tarball %s: %w", tarPath, err)
	}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	return &result{ref: ref.String(), digest: d.String(), revision: revision, version: version, tarball: tarPath, image: img}, nil
}

// stamp returns the release version (internal/version, the one place it is
// written) and the VCS revision and commit time the Go toolchain recorded
// in the binary.
func stamp(bin string) (version, revision string, created time.Time, err error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", "", time.Time{}, fmt.Errorf("read build info of %s: %w", bin, err)
	}
	version, revision, created = release.Release, "unknown", time.Unix(0, 0).UTC()
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				created = t
			}
		}
	}
	if version == "" {
		version = "(devel)"
	}
	return version, revision, created, nil
}

// rootfs is the image's only layer: the binary, CA certificates, the users
// and a /tmp, all dated at the commit time (the same source gives the same
// layer).
func rootfs(binary, certs []byte, mod time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: mod, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body)), ModTime: mod, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	passwd := "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group := "root:x:0:\nnonroot:x:65532:\n"
	steps := []func() error{
		func() error { return dir("etc", 0o755) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return dir("etc/ssl", 0o755) },
		func() error { return dir("etc/ssl/certs", 0o755) },
		func() error { return file(certsPath, 0o644, certs) },
		func() error { return dir("tmp", 0o1777) },
		func() error { return dir("usr", 0o755) },
		func() error { return dir("usr/local", 0o755) },
		func() error { return dir("usr/local/bin", 0o755) },
		func() error { return file(binPath, 0o755, binary) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
