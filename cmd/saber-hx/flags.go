package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/saber-hx/saber-hx/ysb"
)

var errHelp = flag.ErrHelp

// newFlagSet returns a flag set that reports errors instead of exiting.
// Its -h prints the synopsis and every flag with its default to stdout (help
// asked for is output, not an error); a bad flag is reported once, by
// exitCode, and names the -h that lists them.
func newFlagSet(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage:\n%s\nFlags:\n", synopsis)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parseFlags parses args, turning flag errors into usage errors (exit 2):
// -h prints the usage and returns errHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	// The flag package calls Usage on every error too: only -h prints it.
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(joinPinValue(args))
	fs.Usage = usage
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage()
			return errHelp
		}
		return usagef("%v (saber-hx %s -h lists the flags)", err, fs.Name())
	}
	return nil
}

// parse is parseFlags for a command that takes no arguments.
func parse(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// flagScope is a form of a command, named as the messages say it, and the
// flags it does not read ("x-*": every flag whose name begins with "x-").
type flagScope struct {
	name string
	not  []string
}

// checkScope refuses (exit 2) the first flag given on fs that forms[at]
// does not read, naming the forms that read it: none is silently ignored.
func checkScope(fs *flag.FlagSet, forms []flagScope, at int) (err error) {
	ignores := func(s flagScope, name string) bool {
		return slices.ContainsFunc(s.not, func(n string) bool {
			p, ok := strings.CutSuffix(n, "*")
			return n == name || ok && strings.HasPrefix(name, p)
		})
	}
	fs.Visit(func(f *flag.Flag) {
		var where []string
		for _, o := range forms {
			if !ignores(o, f.Name) {
				where = append(where, o.name)
			}
		}
		if err == nil && ignores(forms[at], f.Name) {
			err = usagef("%s: --%s applies to %s, not to %s", fs.Name(), f.Name, strings.Join(where, " and "), forms[at].name)
		}
	})
	return err
}

// joinPinValue lets --pin take its value as the next argument, as in
// "--pin false": --pin is a boolean flag (a bare --pin means true), which
// the flag package never gives a separate value, so "false" would be left
// as a stray argument. A word that is no value and no file ("--pin
// maybe") is taken as its value too, for the flag's error to name --pin.
func joinPinValue(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "-pin" || a == "--pin") && i+1 < len(args) {
			var p pinFlag
			next := args[i+1]
			_, statErr := os.Stat(next)
			if p.Set(next) == nil || (statErr != nil && !strings.ContainsAny(next, "-./")) {
				out = append(out, a+"="+args[i+1])
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// genFlags are the data generator's knobs.
type genFlags struct {
	campaigns, adsPerCampaign int
}

func (f *genFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.campaigns, "num-campaigns", 100, "campaigns in the generated table")
	fs.IntVar(&f.adsPerCampaign, "ads-per-campaign", 10, "ads per campaign in the generated table")
}

func (f *genFlags) config() (ysb.GenConfig, error) {
	c := ysb.DefaultGenConfig()
	c.Campaigns, c.AdsPerCampaign = f.campaigns, f.adsPerCampaign
	if err := c.Validate(); err != nil {
		return c, usageError{err}
	}
	return c, nil
}

// msFlag is a time flag kept in milliseconds: a Go duration ("200ms",
// "1.5s", "1m") or, as before durations were taken, a bare integer of
// milliseconds ("200"). A duration that is not a whole number of
// milliseconds is refused rather than rounded.
type msFlag struct {
	ms       *int64
	duration bool // the last value set was a duration, not a bare integer
}

// msVar registers a millisecond time flag.
func msVar(fs *flag.FlagSet, p *int64, name string, value int64, usage string) *msFlag {
	*p = value
	f := &msFlag{ms: p}
	fs.Var(f, name, usage+" (a duration such as 200ms or 2s; a bare integer is milliseconds)")
	return f
}

func (f *msFlag) String() string {
	if f == nil || f.ms == nil {
		return "0"
	}
	return strconv.FormatInt(*f.ms, 10)
}

func (f *msFlag) Set(s string) error {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		*f.ms, f.duration = n, false
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 200ms or 2s, or a whole number of milliseconds")
	}
	if d%time.Millisecond != 0 {
		return fmt.Errorf("%v is not a whole number of milliseconds", d)
	}
	*f.ms, f.duration = int64(d/time.Millisecond), true
	return nil
}
