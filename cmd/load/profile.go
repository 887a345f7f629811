package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// profileFetch is a gateway CPU profile being taken during a timed phase.
// A nil *profileFetch (no --profile) does nothing.
type profileFetch struct {
	lr       *loadRun
	scenario string
	done     chan struct{}
}

// startProfile starts a CPU profile of the gateway covering most of a
// timed phase of length phase (one second less, so that the profile ends
// inside the phase rather than in the idle time after it).
func (lr *loadRun) startProfile(ctx context.Context, scenario string, phase time.Duration) *profileFetch {
	if lr.opts.profileDir == "" || lr.gw.metricsAddr == "" {
		return nil
	}
	p := &profileFetch{lr: lr, scenario: scenario, done: make(chan struct{})}
	seconds := max(1, int((phase-time.Second)/time.Second))
	go func() {
		defer close(p.done)
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", lr.gw.metricsAddr, seconds)
		p.save(ctx, url, scenario+".cpu.pprof", time.Duration(seconds)*time.Second+time.Minute)
	}()
	return p
}

// finish waits for the CPU profile, then takes the allocation profile
// (cumulative since the gateway started).
func (p *profileFetch) finish() {
	if p == nil {
		return
	}
	<-p.done
	url := fmt.Sprintf("http://%s/debug/pprof/allocs", p.lr.gw.metricsAddr)
	p.save(context.Background(), url, p.scenario+".allocs.pprof", time.Minute)
}

// save writes what url answers into the profile directory; a failure is
// reported and does not fail the scenario.
func (p *profileFetch) save(ctx context.Context, url, name string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	path := filepath.Join(p.lr.opts.profileDir, name)
	if err := fetchToFile(ctx, url, path); err != nil {
		fmt.Fprintf(p.lr.stderr, "load: %s: profile %s: %v\n", p.scenario, name, err)
		return
	}
	fmt.Fprintf(p.lr.stderr, "load: %s: wrote %s\n", p.scenario, path)
}

func fetchToFile(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: newLoopbackTransport(1)}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %w", url, httpError(resp))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
