package docker

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

const (
	// readyPoll is how often Create tries the runner socket. A dial of a
	// missing socket costs microseconds, and the runner is usually up
	// within tens of milliseconds of the container start.
	readyPoll = 5 * time.Millisecond
	// readyTimeout caps the wait for the runner whatever the caller's
	// deadline: a runner that has not listened by then never will.
	readyTimeout = 15 * time.Second
	// inspectTimeout bounds the inspect that explains an early exit.
	inspectTimeout = 5 * time.Second
)

// waitReady returns once the runner accepts a connection on sock, or an
// ErrStartFailed error if the container stops first or readyTimeout
// passes. The caller's cancellation is returned as is.
func (p *Provider) waitReady(ctx context.Context, containerID, sock string) error {
	waitCtx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	// not-running, not next-exit: the container may already have exited
	// before this request reaches the engine.
	exited, waitErr := p.cli.ContainerWait(waitCtx, containerID, container.WaitConditionNotRunning)
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	var lastErr error
	for {
		err := p.answers(waitCtx, sock)
		if err == nil {
			return nil
		}
		lastErr = err
		select {
		case <-tick.C:
		case <-exited:
			return p.exitError(ctx, containerID)
		case err := <-waitErr:
			if waitCtx.Err() == nil {
				return fmt.Errorf("watch container %s: %w", short(containerID), engineErr(err))
			}
			// The deadline or the caller; handled below on the next pass.
			exited, waitErr = nil, nil
		case <-waitCtx.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("wait for runner: %w", ctx.Err())
			}
			return fmt.Errorf("%w: runner did not listen on %s within %v (last dial: %v)",
				sandbox.ErrStartFailed, sock, readyTimeout, lastErr)
		}
	}
}

// answers reports whether the runner on sock is ready. Under runc a
// connection is proof enough. Under gVisor the first connections to a
// runner just started (or restored) can be taken and then reset by the
// peer on a loaded machine, so only a protocol handshake counts.
func (p *Provider) answers(ctx context.Context, sock string) error {
	if p.cfg.Runtime != memoryRuntime {
		conn, err := dialSocket(ctx, sock)
		if err == nil {
			conn.Close()
		}
		return err
	}
	hctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	cl, err := protocol.Dial(hctx, func(ctx context.Context) (net.Conn, error) { return dialSocket(ctx, sock) })
	if err != nil {
		return err
	}
	return cl.Close()
}

// exitError explains a container that stopped before its runner listened.
// The log driver is "none" (see ContainerConfig), so the container's state
// is all there is; the hint says how to see the runner's own output.
func (p *Provider) exitError(ctx context.Context, containerID string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), inspectTimeout)
	defer cancel()
	c, err := p.cli.ContainerInspect(ctx, containerID)
	if err != nil {
		return fmt.Errorf("%w: container %s exited before its runner listened (inspect: %v)",
			sandbox.ErrStartFailed, short(containerID), err)
	}
	if c.State == nil {
		return fmt.Errorf("%w: container %s exited before its runner listened",
			sandbox.ErrStartFailed, short(containerID))
	}
	detail := fmt.Sprintf("exit code %d", c.State.ExitCode)
	if c.State.OOMKilled {
		detail += ", OOM killed"
	}
	if c.State.Error != "" {
		detail += ", engine error: " + c.State.Error
	}
	// Container logs are off, so say where the runner's output can be seen.
	return fmt.Errorf("%w: runner exited before listening (%s); logs are off, run the runner by hand in the image to see its output",
		sandbox.ErrStartFailed, detail)
}
