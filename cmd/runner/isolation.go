package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"
)

// Waiting for the network policy. On Kubernetes a pod's NetworkPolicy is
// programmed by the network plugin after the pod starts: for a moment
// (0.2 s seen on the local cluster with kube-router) a new pod can reach
// what its policy forbids. Nothing in a sandbox runs but through the
// runner, so the runner serves only once an address the policy forbids
// (--await-blocked, the API server's) has stopped answering: from then
// on no sandbox code can run with the policy not yet in force.
const (
	// blockedProbeTimeout bounds one connection attempt; a policy that
	// drops rather than rejects shows as this timeout.
	blockedProbeTimeout = 300 * time.Millisecond
	// blockedWaitLimit is how long the runner waits for the policy before
	// it gives up, exits, and so fails the sandbox's start.
	blockedWaitLimit = time.Minute
)

// errNotBlocked says the network policy never took effect.
var errNotBlocked = errors.New("the network policy never blocked the probe address")

// awaitBlocked returns once addr cannot be reached, retrying while it
// can, for at most limit.
func awaitBlocked(ctx context.Context, addr string, limit time.Duration, log *slog.Logger) error {
	deadline := time.Now().Add(limit)
	for tries := 1; ; tries++ {
		d := net.Dialer{Timeout: blockedProbeTimeout}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			if tries > 1 {
				log.Info("network policy in force", "probe", addr, "tries", tries)
			}
			return ctx.Err()
		}
		conn.Close()
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s still answered after %v; refusing to serve a sandbox its policy does not hold", errNotBlocked, addr, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
