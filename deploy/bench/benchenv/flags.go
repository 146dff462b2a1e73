package benchenv

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// ParseFlags parses args into fs the way every section's tool answers:
// -h and --help print help (the description and an example) and the flags
// on stdout and report done (exit 0); a bad flag prints the same on stderr
// and returns the error. done is false when the tool should run.
func ParseFlags(fs *flag.FlagSet, help string, args []string, stdout, stderr io.Writer) (done bool, err error) {
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err = fs.Parse(args)
	usage := func(w io.Writer) {
		fmt.Fprint(w, help)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return true, nil
	}
	if err != nil {
		usage(stderr)
		return true, err
	}
	return false, nil
}

// List splits a comma-separated flag value, dropping empty items.
func List(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// IntList is List of positive integers; flagName names the flag in the error.
func IntList(flagName, v string) ([]int, error) {
	var out []int
	for _, s := range List(v) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: bad value %q", flagName, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// Profile starts a CPU profile of this process into path and returns what
// stops it; "" profiles nothing.
func Profile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// Flags registers on fs a flag for every field of the struct *opts tagged
// `flag:"name"`, its default from the tag `default:"…"` (written as on the
// command line; absent: the field's value) and its help from `help:"…"`.
// Fields may be string, bool, int, float64 or time.Duration; any other type,
// or a default that does not parse, panics (a mistake in the section's
// code, which its test of -h finds).
func Flags(fs *flag.FlagSet, opts any) {
	v := reflect.ValueOf(opts).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name, ok := f.Tag.Lookup("flag")
		if !ok {
			continue
		}
		def, help := f.Tag.Get("default"), f.Tag.Get("help")
		// The options structs' fields are unexported: reach them through
		// their address, as flag's own XxxVar functions do.
		p := reflect.NewAt(f.Type, unsafe.Pointer(v.Field(i).UnsafeAddr())).Interface()
		switch p := p.(type) {
		case *string:
			fs.StringVar(p, name, *p, help)
		case *bool:
			fs.BoolVar(p, name, *p, help)
		case *int:
			fs.IntVar(p, name, *p, help)
		case *float64:
			fs.Float64Var(p, name, *p, help)
		case *time.Duration:
			fs.DurationVar(p, name, *p, help)
		default:
			panic(fmt.Sprintf("benchenv.Flags: field %s: unsupported type %s", f.Name, f.Type))
		}
		if def != "" {
			fl := fs.Lookup(name)
			if err := fl.Value.Set(def); err != nil {
				panic(fmt.Sprintf("benchenv.Flags: -%s: default %q: %v", name, def, err))
			}
			fl.DefValue = fl.Value.String()
		}
	}
}
