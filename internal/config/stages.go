package config

import "fmt"

func errorf(format string, args ...any) error {
	return fmt.Errorf("config: "+format, args...)
}
