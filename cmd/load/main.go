// Command load measures a Sandgate gateway under load: it starts a
// gateway of its own (own port, state directory and container instance),
// drives it over raw MCP Streamable HTTP with an OAuth token, and prints
// one table row per scenario.
//
//	go run ./cmd/load [--scenarios read1k-10,echo-1] [--duration 10s] [--json FILE] [--label before]
//
// The numbers are meant for before/after comparisons of the same host:
// run it once, change the gateway, run it again with another --label and
// compare the --json files.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// options is the command line.
type options struct {
	gatewayBin   string
	runnerBin    string
	image        string
	gatewayFlags []string // extra gateway flags, after ours so they win
	scenarios    []string
	duration     time.Duration // timed phase of each throughput scenario
	callers      int
	sessions     int // sessions of the *-10 scenarios
	manySessions int // sessions of the *-100 scenarios
	burstSize    int
	bursts       int
	densityN     int
	maxTime      time.Duration
	jsonPath     string
	label        string
	profileDir   string
}

func main() {
	opts, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(2)
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	if err := run(ctx, opts, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	var scenarios string
	var gatewayFlags listFlag
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: go run ./cmd/load [flags]

Starts a gateway of its own on a free loopback port, with a temporary var
directory, its own container instance and raised tenant quotas; runs the
scenarios against it over MCP with an OAuth token; prints one row per
scenario; then deletes its sessions, stops the gateway (which removes its
containers) and removes the directory. density is not in the default set.

`)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.gatewayBin, "gateway", "bin/gateway", "gateway binary to start")
	fs.StringVar(&o.runnerBin, "runner", "bin/runner", "runner binary the gateway injects into sandboxes")
	fs.StringVar(&o.image, "image", "sandgate/base:latest", "default sandbox image")
	fs.Var(&gatewayFlags, "gateway-flag", "extra gateway flag, e.g. --gateway-flag=--memory=1GiB (repeatable; commas separate flags: a comma followed by a dash starts the next one)")
	fs.StringVar(&scenarios, "scenarios", strings.Join(defaultScenarios(), ","), "comma-separated scenarios; known: "+strings.Join(scenarioNames(), ", "))
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "timed phase of each throughput scenario (and the time bound of the sequential ones)")
	fs.IntVar(&o.callers, "callers", 100, "concurrent callers of the read1k-* and echo-* scenarios")
	fs.IntVar(&o.sessions, "sessions", 10, "sessions of the read1k-10 and echo-10 scenarios")
	fs.IntVar(&o.manySessions, "many-sessions", 100, "sessions of the read1k-100 and echo-100 scenarios")
	fs.IntVar(&o.burstSize, "burst-size", 50, "sessions started at once by start-burst")
	fs.IntVar(&o.bursts, "bursts", 1, "how many times start-burst repeats its burst")
	fs.IntVar(&o.densityN, "density-n", 300, "idle sandboxes the density scenario tries to create")
	fs.DurationVar(&o.maxTime, "max-time", 15*time.Minute, "hard deadline for the whole run; past it everything is cancelled and the exit status is non-zero")
	fs.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&o.label, "label", "", "name of this run in the output header, e.g. before")
	fs.StringVar(&o.profileDir, "profile", "", "write gateway CPU and allocation profiles of each throughput scenario into this directory (needs a gateway with --metrics-addr and --pprof)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (flags only; see -h)", fs.Arg(0))
	}
	o.gatewayFlags = gatewayFlags
	o.scenarios = splitList(scenarios)
	if len(o.scenarios) == 0 {
		return o, errors.New("--scenarios is empty")
	}
	known := scenarioNames()
	for _, s := range o.scenarios {
		if !slices.Contains(known, s) {
			return o, fmt.Errorf("unknown scenario %q; known: %s", s, strings.Join(known, ", "))
		}
	}
	switch {
	case o.duration < time.Second:
		return o, fmt.Errorf("--duration %v: want at least 1s", o.duration)
	case o.callers < 1 || o.sessions < 1 || o.manySessions < 1:
		return o, errors.New("--callers, --sessions and --many-sessions must be at least 1")
	case o.burstSize < 1 || o.bursts < 1 || o.densityN < 1:
		return o, errors.New("--burst-size, --bursts and --density-n must be at least 1")
	case o.maxTime <= 0:
		return o, errors.New("--max-time must be positive")
	}
	if err := checkGatewayFlags(o.gatewayFlags); err != nil {
		return o, err
	}
	for _, p := range []*string{&o.gatewayBin, &o.runnerBin} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return o, err
		}
		if _, err := os.Stat(abs); err != nil {
			return o, fmt.Errorf("%w (build it with `make build`, or point --gateway/--runner elsewhere)", err)
		}
		*p = abs
	}
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return o, fmt.Errorf("--profile: %w", err)
		}
	}
	return o, nil
}

// run is the whole load run. Cleanup (sessions deleted, gateway stopped,
// temporary directory removed) happens whatever the outcome, and even
// past --max-time, under deadlines of its own.
func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	started := time.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, o.maxTime, fmt.Errorf("the --max-time deadline of %v passed", o.maxTime))
	defer cancel()
	// A last resort in case cleanup itself hangs: its steps have their
	// own time limits, which add up to about four minutes.
	const cleanupLimit = 5 * time.Minute
	watchdog := time.AfterFunc(o.maxTime+cleanupLimit, func() {
		fmt.Fprintf(stderr, "load: cleanup still not done %v after the --max-time deadline; exiting (containers of this run may remain)\n", cleanupLimit)
		os.Exit(3)
	})
	defer watchdog.Stop()

	tmp, err := os.MkdirTemp("", "sandgate-load-")
	if err != nil {
		return err
	}
	gw, err := startGateway(ctx, gatewayConfig{
		bin: o.gatewayBin, runner: o.runnerBin, image: o.image, extraFlags: o.gatewayFlags,
		tmpDir: tmp, profiling: o.profileDir != "", stderr: stderr,
	})
	if err != nil {
		if gw != nil {
			gw.keepLog(stderr)
		}
		removeTempDir(tmp, stderr)
		return err
	}
	failed := true
	defer func() {
		if failed {
			gw.keepLog(stderr)
		}
		removeTempDir(tmp, stderr)
	}()

	client, err := newMCPClient(ctx, gw, max(o.callers, o.burstSize, o.manySessions))
	var results []result
	if err == nil {
		results = runScenarios(ctx, o, gw, client, stderr)
		client.deleteAllSessions(stderr)
	}
	err = errors.Join(err, gw.stop(stderr))
	gw.removeLeftoverContainers(stderr)

	if len(results) > 0 {
		header := runHeader{Label: o.label, Started: started, Elapsed: time.Since(started), Gateway: o.gatewayBin,
			GatewayArgs: gw.args, Duration: o.duration.String()}
		printTable(stdout, header, results)
		if o.jsonPath != "" {
			if jerr := writeJSON(o.jsonPath, header, results); jerr != nil {
				err = errors.Join(err, jerr)
			} else {
				fmt.Fprintf(stderr, "load: results written to %s\n", o.jsonPath)
			}
		}
	}
	if err == nil {
		err = context.Cause(ctx) // the deadline or a signal
	}
	if err == nil {
		var broken []string
		for _, r := range results {
			if r.Failure != "" {
				broken = append(broken, r.Scenario)
			}
		}
		if len(broken) > 0 {
			err = fmt.Errorf("scenarios that could not run: %s (see the table)", strings.Join(broken, ", "))
		}
	}
	failed = err != nil
	return err
}

// listFlag is a repeatable flag whose values may also be comma lists.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

// Set splits only at a comma followed by a dash, so that a flag whose
// value is itself a comma list (--tools=files,exec) stays whole.
func (l *listFlag) Set(v string) error {
	start := 0
	for i := 0; i < len(v); i++ {
		if v[i] == ',' && i+1 < len(v) && v[i+1] == '-' {
			*l = append(*l, v[start:i])
			start = i + 1
		}
	}
	*l = append(*l, v[start:])
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
