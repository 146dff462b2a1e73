package benchenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// ParseFlags parses args into fs: -h and --help print help and the flags on
// stdout (done, exit 0); a bad flag prints them on stderr with the error.
func ParseFlags(fs *flag.FlagSet, help string, args []string, stdout, stderr io.Writer) (done bool, err error) {
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	if err = fs.Parse(args); err == nil {
		return false, nil
	}
	w := stderr
	if errors.Is(err, flag.ErrHelp) {
		w, err = stdout, nil
	}
	fmt.Fprint(w, help)
	fs.SetOutput(w)
	fs.PrintDefaults()
	return true, err
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

// Flags registers on fs a flag for every field of *opts tagged
// `flag:"name"`, with `default:"…"` (as on the command line) and
// `help:"…"`: string, bool, int, float64, time.Duration, and []int and
// []string (comma-separated); an untagged embedded struct's fields too.
// Another type, or a bad default, panics.
func Flags(fs *flag.FlagSet, opts any) {
	v := reflect.ValueOf(opts).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		// The options structs' fields are unexported: reach them through
		// their address, as flag's own XxxVar functions do.
		p := reflect.NewAt(f.Type, unsafe.Pointer(v.Field(i).UnsafeAddr())).Interface()
		name, ok := f.Tag.Lookup("flag")
		if !ok {
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				Flags(fs, p)
			}
			continue
		}
		def, help := f.Tag.Get("default"), f.Tag.Get("help")
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
		case *[]int:
			fs.Func(name, help, func(s string) error {
				*p = nil
				for _, v := range List(s) {
					n, err := strconv.Atoi(v)
					if err != nil || n < 1 {
						return fmt.Errorf("-%s: bad value %q", name, v)
					}
					*p = append(*p, n)
				}
				return nil
			})
		case *[]string:
			fs.Func(name, help, func(s string) error { *p = List(s); return nil })
		default:
			panic(fmt.Sprintf("benchenv.Flags: field %s: unsupported type %s", f.Name, f.Type))
		}
		if def != "" {
			fl := fs.Lookup(name)
			if err := fl.Value.Set(def); err != nil {
				panic(fmt.Sprintf("benchenv.Flags: -%s: default %q: %v", name, def, err))
			}
			fl.DefValue = def
		}
	}
}

// Parse registers the tagged fields of *opts (Flags) on a new flag set and
// parses args as ParseFlags does; when *opts has a Validate() error method
// it is called after a successful parse.
func Parse(help string, opts any, args []string, stdout, stderr io.Writer) (done bool, err error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	Flags(fs, opts)
	if done, err := ParseFlags(fs, help, args, stdout, stderr); done || err != nil {
		return true, err
	}
	if v, ok := opts.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return true, err
		}
	}
	return false, nil
}

// Run is Main with flags parsed into *opts and a Stack around run.
func Run(help string, opts interface{ Stack() *Options }, run func(ctx context.Context, st *Stack, stdout io.Writer) error) {
	so := opts.Stack()
	Main(so.Name, func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if done, err := Parse(help, opts, args, stdout, stderr); done || err != nil {
			return err
		}
		st, err := Start(ctx, *so, stderr)
		if err != nil {
			return err
		}
		defer st.Close()
		return run(ctx, st, stdout)
	})
}
