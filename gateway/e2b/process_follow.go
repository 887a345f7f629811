package e2b

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/gateway/e2b/envd/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// followWait is how long one process.output read waits for output on a
// runner that can wait (FeatureOutputWait); pollInterval is the pause
// between empty reads on one that cannot.
const (
	followWait   = 5 * time.Second
	pollInterval = 50 * time.Millisecond
)

// follower streams a background process's output log as envd's events.
type follower struct {
	c    *protocol.Client
	id   string                               // the runner's process id
	send func(ev *process.ProcessEvent) error // one event to the client
	ping time.Duration                        // keepalive interval
}

// follow sends the start event, then output from offset as it arrives,
// then the end event once the process has exited and everything it
// wrote was sent. It returns when the process has ended or ctx ends (the
// client went away: the process keeps running).
func (f *follower) follow(ctx context.Context, pid int, offset int64) error {
	if err := f.send(startEvent(pid)); err != nil {
		return err
	}
	wait := f.c.Supports(protocol.FeatureOutputWait)
	last := time.Now() // when an event last went out
	for {
		req := protocol.ProcessOutputRequest{ID: f.id, Offset: offset}
		if wait {
			req.WaitMs = min(followWait, max(time.Until(last.Add(f.ping)), 0)).Milliseconds()
		}
		var out protocol.ProcessOutput
		if err := f.c.Call(ctx, protocol.OpProcessOutput, req, &out); err != nil {
			return orContext(ctx, err)
		}
		sent, err := f.sendOutput(out)
		if err != nil {
			return err
		}
		offset = out.NextOffset
		if sent {
			last = time.Now()
		}
		// OutputBytes is read after the slice, so a chunk logged in
		// between is read next round rather than lost behind the end.
		if !out.Process.Running && !out.More && offset >= out.Process.OutputBytes {
			return f.send(endEvent(out.Process))
		}
		if out.More {
			continue
		}
		if time.Since(last) >= f.ping {
			if err := f.send(keepaliveEvent()); err != nil {
				return err
			}
			last = time.Now()
		}
		if !wait && !sent {
			if err := pause(ctx, pollInterval); err != nil {
				return err
			}
		}
	}
}

// sendOutput sends one slice of output: a note on what was lost first,
// then stdout, then stderr (the runner returns a slice's two streams
// apart, so their interleaving within it is not kept).
func (f *follower) sendOutput(out protocol.ProcessOutput) (bool, error) {
	var evs []*process.ProcessEvent
	if out.Dropped > 0 {
		note := fmt.Sprintf("[sandgate: %d bytes of this process's output were dropped before they could be sent; the sandbox keeps only its most recent output]\n", out.Dropped)
		evs = append(evs, stderrEvent([]byte(note)))
	}
	if len(out.Stdout) > 0 {
		evs = append(evs, stdoutEvent(out.Stdout))
	}
	if len(out.Stderr) > 0 {
		evs = append(evs, stderrEvent(out.Stderr))
	}
	for _, ev := range evs {
		if err := f.send(ev); err != nil {
			return false, err
		}
	}
	return len(evs) > 0, nil
}

func startEvent(pid int) *process.ProcessEvent {
	return &process.ProcessEvent{Event: &process.ProcessEvent_Start{Start: &process.ProcessEvent_StartEvent{Pid: uint32(pid)}}}
}

func stdoutEvent(b []byte) *process.ProcessEvent {
	out := &process.ProcessEvent_DataEvent_Stdout{Stdout: b}
	return &process.ProcessEvent{Event: &process.ProcessEvent_Data{Data: &process.ProcessEvent_DataEvent{Output: out}}}
}

func stderrEvent(b []byte) *process.ProcessEvent {
	out := &process.ProcessEvent_DataEvent_Stderr{Stderr: b}
	return &process.ProcessEvent{Event: &process.ProcessEvent_Data{Data: &process.ProcessEvent_DataEvent{Output: out}}}
}

func keepaliveEvent() *process.ProcessEvent {
	return &process.ProcessEvent{Event: &process.ProcessEvent_Keepalive{Keepalive: &process.ProcessEvent_KeepAlive{}}}
}

// endEvent describes how p ended as envd does, which reports Go's
// os.ProcessState: exit code -1 and "signal: killed" for a process a
// signal ended, and as the error the wait error's text ("exit status
// 3") unless the runner explains the end itself ("timed out after 5s",
// "killed: out of memory").
func endEvent(p protocol.ProcessInfo) *process.ProcessEvent {
	end := &process.ProcessEvent_EndEvent{ExitCode: -1, Exited: p.Signal == ""}
	if p.ExitCode != nil {
		end.ExitCode = int32(*p.ExitCode)
	}
	end.Status = fmt.Sprintf("exit status %d", end.ExitCode)
	if p.Signal != "" {
		end.Status = "signal: " + signalText(p.Signal)
	}
	switch {
	case p.Message != "":
		end.Error = &p.Message
	case end.ExitCode != 0:
		end.Error = &end.Status
	}
	return &process.ProcessEvent{Event: &process.ProcessEvent_End{End: end}}
}

// signalText is how Go's os.ProcessState names a signal ("killed" for
// SIGKILL), or the runner's name for one it does not know.
func signalText(name string) string {
	if n := unix.SignalNum(name); n != 0 {
		return n.String()
	}
	return name
}

// orContext returns ctx's error when ctx has ended, so that a client
// going away is not reported as the runner's failure.
func orContext(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
