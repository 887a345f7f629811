package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// scrapeMetrics reads the gateway's /metrics into a map from
// "name{labels}" to value, or returns nil when the gateway serves none
// (an older gateway, or metrics turned off).
func (g *gatewayProcess) scrapeMetrics(ctx context.Context) map[string]float64 {
	if g.metricsAddr == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+g.metricsAddr+"/metrics", nil)
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// sumOf adds the values of every series of metric name.
func sumOf(m map[string]float64, name string) float64 {
	var sum float64
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			sum += v
		}
	}
	return sum
}

// waitPoolSettled waits, at most limit, until the gateway's warm pool is
// full again (ready as many as its target), so that a measurement meets
// the pool a deployment at rest would offer, and no refill competes with
// the measured calls for the CPU. It returns the ready count, or -1 when
// the gateway reports no pool.
func (g *gatewayProcess) waitPoolSettled(ctx context.Context, limit time.Duration) float64 {
	deadline := time.Now().Add(limit)
	ready := -1.0
	for time.Now().Before(deadline) && ctx.Err() == nil {
		m := g.scrapeMetrics(ctx)
		if m == nil {
			return -1
		}
		ready = sumOf(m, "sandgate_pool_ready")
		if ready >= sumOf(m, "sandgate_pool_target") {
			return ready
		}
		time.Sleep(250 * time.Millisecond)
	}
	return ready
}

// poolClaims returns the gateway's pool hits and misses so far.
func (g *gatewayProcess) poolClaims(ctx context.Context) (hits, misses float64, ok bool) {
	m := g.scrapeMetrics(ctx)
	if m == nil {
		return 0, 0, false
	}
	return m[`sandgate_pool_claims_total{result="hit"}`], m[`sandgate_pool_claims_total{result="miss"}`], true
}

func describeClaims(hits, misses float64) string {
	return fmt.Sprintf("pool %.0f hits, %.0f misses", hits, misses)
}
