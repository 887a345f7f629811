package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/sandbox/workspace"
)

// envPrefix names the environment fallback of every flag: SANDGATE_ and
// the flag's name in capitals with dashes as underscores.
const envPrefix = "SANDGATE_"

// envName is the environment variable that stands in for flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applyEnv sets every flag of fs that the command line did not set from
// its environment variable, through the flag's own parser, so that a bad
// value is an error naming the variable and what it accepts, never a
// silent default. Flags on the command line win. Any flag defined on fs
// gets this, with no code of its own.
func applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		v, ok := os.LookupEnv(envName(f.Name))
		if !ok || given[f.Name] || err != nil {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = fmt.Errorf("%s=%q: want %s (as --%s)", envName(f.Name), v, accepts(f), f.Name)
		}
	})
	return err
}

// parseWithEnv parses args into fs, then applies the environment.
func parseWithEnv(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	return applyEnv(fs)
}

// accepts says in words what a flag's value may be.
func accepts(f *flag.Flag) string {
	switch f.Value.(type) {
	case *byteSize:
		return "a size like 512MiB or 4GiB"
	case *backendFlag:
		return "auto, loop or tmpfs"
	}
	getter, ok := f.Value.(flag.Getter)
	if !ok {
		return "a valid value"
	}
	switch getter.Get().(type) {
	case bool:
		return "true or false (or 1, 0, t, f)"
	case time.Duration:
		return "a duration like 30s, 5m or 1h"
	case int, int64:
		return "a whole number"
	case float64:
		return "a number like 1 or 0.5"
	}
	return "a valid value"
}

// byteSize is a flag.Value for sizes like 512MiB, 1GiB, 100M or plain
// bytes; zero and negative sizes are refused.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

// parseBytes reads sizes like 512MiB, 1GiB, 100M or plain bytes.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
			if err != nil || v <= 0 {
				break
			}
			return int64(v * float64(u.mult)), nil
		}
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil && v > 0 {
		return v, nil
	}
	return 0, fmt.Errorf("%q is not a size like 512MiB or 1GiB", s)
}

// backendFlag is a flag.Value for --workspace-backend.
type backendFlag workspace.Backend

func (b *backendFlag) String() string { return string(*b) }

func (b *backendFlag) Set(s string) error {
	v, err := workspace.ParseBackend(s)
	if err != nil {
		return err
	}
	*b = backendFlag(v)
	return nil
}
