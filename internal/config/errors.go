package config

import "fmt"

// errorf is every error of this package: fmt.Errorf under the "config: "
// prefix (a %w in format wraps as usual).
func errorf(format string, args ...any) error {
	return fmt.Errorf("config: "+format, args...)
}
