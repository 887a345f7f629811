package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// result is one scenario's row, and its JSON record.
type result struct {
	Scenario string `json:"scenario"`
	Callers  int    `json:"callers"`
	Sessions int    `json:"sessions"`
	// Calls counts the calls of the timed phase, errors included;
	// CallsPerSecond and the latencies count the successful ones only.
	Calls          int      `json:"calls"`
	Errors         int      `json:"errors"`
	ErrorSamples   []string `json:"error_samples,omitempty"` // the first distinct messages
	ElapsedSeconds float64  `json:"elapsed_s"`
	CallsPerSecond float64  `json:"calls_per_s"`
	P50Ms          float64  `json:"p50_ms"`
	P99Ms          float64  `json:"p99_ms"`
	MaxMs          float64  `json:"max_ms"`
	// Metrics are the scenario's other numbers (gateway CPU per call,
	// response bytes, memory...), by name, for comparing runs.
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Extra is the table's last column, in words.
	Extra []string `json:"extra,omitempty"`
	// Failure says why the scenario could not run (or finish).
	Failure string `json:"failure,omitempty"`
}

func (r *result) metric(name string, v float64, text string) {
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	r.Metrics[name] = v
	if text != "" {
		r.Extra = append(r.Extra, text)
	}
}

// recorder collects the outcomes of a timed phase; callers share it.
type recorder struct {
	mu           sync.Mutex
	latencies    []time.Duration // of successful calls
	errors       int
	errorSamples []string
	bytes        int64 // response bytes of successful calls
}

// maxErrorSamples is how many distinct error messages a row keeps.
const maxErrorSamples = 3

func (r *recorder) add(took time.Duration, responseBytes int64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.latencies = append(r.latencies, took)
		r.bytes += responseBytes
		return
	}
	r.errors++
	if msg := err.Error(); len(r.errorSamples) < maxErrorSamples && !slices.Contains(r.errorSamples, msg) {
		r.errorSamples = append(r.errorSamples, msg)
	}
}

// addUnlessCancelled is add for timed phases: a call that failed because
// the run itself was cancelled (deadline, Ctrl-C) says nothing about the
// gateway and is left out.
func (r *recorder) addUnlessCancelled(ctx context.Context, took time.Duration, responseBytes int64, err error) {
	if err != nil && ctx.Err() != nil {
		return
	}
	r.add(took, responseBytes, err)
}

func (r *recorder) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.latencies) + r.errors
}

// result summarizes the phase, which took elapsed.
func (r *recorder) result(scenario string, callers, sessions int, elapsed time.Duration) result {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok := len(r.latencies)
	res := result{Scenario: scenario, Callers: callers, Sessions: sessions, Calls: ok + r.errors, Errors: r.errors,
		ErrorSamples: slices.Clone(r.errorSamples), ElapsedSeconds: elapsed.Seconds()}
	if elapsed > 0 {
		res.CallsPerSecond = float64(ok) / elapsed.Seconds()
	}
	if ok > 0 {
		sorted := slices.Clone(r.latencies)
		slices.Sort(sorted)
		res.P50Ms, res.P99Ms, res.MaxMs = ms(percentile(sorted, 0.50)), ms(percentile(sorted, 0.99)), ms(sorted[ok-1])
	}
	return res
}

// responseBytesPerCall is the mean response size of the successful calls.
func (r *recorder) responseBytesPerCall() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.latencies) == 0 {
		return 0
	}
	return float64(r.bytes) / float64(len(r.latencies))
}

// percentile returns the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runHeader describes the run as a whole.
type runHeader struct {
	Label       string        `json:"label,omitempty"`
	Started     time.Time     `json:"started"`
	Elapsed     time.Duration `json:"-"`
	ElapsedS    float64       `json:"elapsed_s"`
	Gateway     string        `json:"gateway"`
	GatewayArgs []string      `json:"gateway_args"`
	Duration    string        `json:"duration_per_scenario"`
	Host        string        `json:"host"`
}

func hostSummary() string {
	return fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}

// printTable writes the results as an aligned table, then the error
// samples of the rows that have errors.
func printTable(w io.Writer, h runHeader, results []result) {
	title := "sandgate load"
	if h.Label != "" {
		title += " [" + h.Label + "]"
	}
	fmt.Fprintf(w, "%s: started %s, took %v; %s; %s per throughput scenario\n", title, h.Started.Format(time.RFC3339),
		h.Elapsed.Round(time.Second), hostSummary(), h.Duration)
	fmt.Fprintf(w, "gateway: %s %s\n\n", h.Gateway, strings.Join(h.GatewayArgs, " "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tcallers\tsessions\tcalls\terrors\tcalls/s\tp50 ms\tp99 ms\textra")
	for _, r := range results {
		extra := strings.Join(r.Extra, "; ")
		if r.Failure != "" {
			extra = "FAILED: " + r.Failure + pre("; ", extra)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", r.Scenario, r.Callers, r.Sessions, r.Calls, r.Errors,
			number(r.CallsPerSecond), number(r.P50Ms), number(r.P99Ms), extra)
	}
	tw.Flush()
	for _, r := range results {
		for i, e := range r.ErrorSamples {
			if i == 0 {
				fmt.Fprintf(w, "\nerrors in %s (first %d distinct of %d):\n", r.Scenario, len(r.ErrorSamples), r.Errors)
			}
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// number formats a figure with precision that suits its size; "-" for
// none.
func number(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func pre(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

// writeJSON writes the run for later comparison.
func writeJSON(path string, h runHeader, results []result) error {
	h.ElapsedS, h.Host = h.Elapsed.Seconds(), hostSummary()
	data, err := json.MarshalIndent(struct {
		runHeader
		Results []result `json:"results"`
	}{h, results}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}
