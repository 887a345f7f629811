package main

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// rlimitNames are the resource limits --rlimits may set: what Docker sets
// as the container's ulimits, for platforms with no such setting in the
// sandbox's spec (a Kubernetes pod has none). The runner sets them on
// itself before anything else starts, so that every process of the
// sandbox inherits them, as it would a container's.
var rlimitNames = map[string]int{
	"nofile": unix.RLIMIT_NOFILE,
	"fsize":  unix.RLIMIT_FSIZE,
	"core":   unix.RLIMIT_CORE,
}

// rlimit is one limit to set, soft and hard alike.
type rlimit struct {
	name     string
	resource int
	value    uint64
}

// parseRlimits reads NAME=VALUE,... (names from rlimitNames, values in
// the resource's unit: a count, or bytes).
func parseRlimits(s string) ([]rlimit, error) {
	if s == "" {
		return nil, nil
	}
	var out []rlimit
	for _, item := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(item, "=")
		resource, known := rlimitNames[name]
		n, err := strconv.ParseUint(value, 10, 64)
		if !ok || !known || err != nil {
			return nil, fmt.Errorf("--rlimits %q: want NAME=VALUE,... with NAME one of nofile, fsize, core and VALUE a number", item)
		}
		out = append(out, rlimit{name: name, resource: resource, value: n})
	}
	return out, nil
}

// applyRlimits sets each limit on the runner, soft and hard, so nothing it
// starts can raise it again.
func applyRlimits(limits []rlimit) error {
	for _, l := range limits {
		if err := unix.Setrlimit(l.resource, &unix.Rlimit{Cur: l.value, Max: l.value}); err != nil {
			return fmt.Errorf("set the %s limit to %d: %w", l.name, l.value, err)
		}
	}
	return nil
}
