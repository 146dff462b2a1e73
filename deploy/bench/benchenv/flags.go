package benchenv

import (
	"errors"
	"flag"
	"fmt"
	"io"
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
