package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gatehouse/gatehouse/internal/config"
)

// runConfig is `gatehouse config check --config F` (validate the file,
// print the effective configuration with secrets redacted) and `gatehouse
// config defaults` (every key at its default, described).
func runConfig(_ context.Context, e env, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fs, _ := newFlags("config check|defaults", e)
		if wantsHelp(args) {
			return fs.Parse(args)
		}
		return errors.New("usage: gatehouse config check [--config F] | defaults")
	}
	verb := args[0]
	fs, cfgPath := newFlags("config "+verb, e)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch verb {
	case "defaults":
		_, err := e.stdout.Write(config.DefaultsYAML())
		return err
	case "check":
		raw, err := os.ReadFile(*cfgPath)
		if err != nil {
			return fmt.Errorf("config check: %w", err)
		}
		cfg, err := config.Check(raw, e.getenv)
		if err != nil {
			return err
		}
		out, err := config.RedactedWith(cfg, appliedValues(cfg))
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "# %s is valid; the effective configuration (defaults and GATEHOUSE_* overrides applied, the values the stages apply, secrets redacted):\n", *cfgPath)
		_, err = e.stdout.Write(out)
		return err
	}
	return fmt.Errorf("config: unknown verb %q (want check or defaults)", verb)
}
