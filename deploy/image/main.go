// Command image builds gatehouse's OCI image without a Docker daemon and
// without pulling a base image: it compiles a static binary (CGO_ENABLED=0)
// and assembles, with go-containerregistry, one layer holding the binary,
// the host's CA certificates, /etc/passwd and /etc/group with the non-root
// user 65532 and a world-writable /tmp — no shell, no package manager. It
// writes an OCI image layout and a tarball `docker load` reads.
//
//	go run ./deploy/image [-out bin/image] [-tag gatehouse:dev]   # make image
//
// deploy/image/Dockerfile builds the same image for users with a Docker
// engine (distroless static base); the path tested here is this one.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: image [flags]\n\nBuilds gatehouse's OCI image (no Docker daemon, no base image pulled) into an OCI layout and a docker-loadable tarball.\n\nExample:\n  go run ./deploy/image -out bin/image -tag gatehouse:dev\n\nFlags:")
		fs.PrintDefaults()
	}
	out := fs.String("out", "bin/image", "output directory: <out>/oci (OCI layout) and <out>/gatehouse.tar (docker load)")
	tag := fs.String("tag", "", "image reference written into the tarball (default gatehouse:<version>)")
	source := fs.String("source", "https://github.com/gatehouse/gatehouse", "org.opencontainers.image.source label")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			os.Exit(0)
		}
		os.Exit(2)
	}
	res, err := build(ctx, options{repoRoot: ".", out: *out, tag: *tag, source: *source, certs: hostCerts})
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("image %s (%s, revision %s)\n  OCI layout: %s\n  tarball:    %s (docker load -i %s)\n",
		res.ref, res.digest, res.revision, filepath.Join(*out, "oci"), res.tarball, res.tarball)
}
