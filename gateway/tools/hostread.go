package tools

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/metrics"
	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// workspaceDir is where every provider mounts a sandbox's workspace, and
// what relative paths in tool arguments are relative to.
const workspaceDir = "/workspace"

// hostFiles reads files with the runner's own code and defaults, for the
// reads the gateway serves from its host's disk: both sides return the
// same result for the same bytes.
var hostFiles = files.New(files.Options{Workspace: workspaceDir})

// readFile reads a file of the call's sandbox. Where the sandbox's
// workspace is on this host's disk (sandbox.HostFiles), the gateway reads
// it there, as the sandbox user, and skips the runner's round trip;
// anything the host cannot answer exactly as the sandbox would (a
// symlink, a path outside the workspace, any error at all) goes to the
// runner, whose answer is the reference. The bytes come back as data or,
// from a runner that sends small content inline, in res.Content.
func (c *call) readFile(ctx context.Context, req protocol.ReadRequest) (res protocol.ReadResult, data []byte, err error) {
	if res, ok := c.g.ReadOnHost(ctx, c.box, req); ok {
		return res, res.Data, nil
	}
	if !c.runner.Payloads() {
		err = c.runner.Call(ctx, protocol.OpFileRead, req, &res)
		return res, nil, err
	}
	// Large content comes beside the JSON, not escaped inside it; small
	// content still comes in Content.
	req.Raw = true
	data, err = c.runner.CallPayload(ctx, protocol.OpFileRead, req, nil, &res)
	return res, data, err
}

// ReadOnHost reads req in b's sandbox from this host's disk when the
// sandbox's workspace is here (sandbox.HostFiles), the bytes in
// res.Data, and counts the read by where it goes. ok is false when the
// host declines, for whatever reason: the caller then asks the runner.
func (g *Toolbox) ReadOnHost(ctx context.Context, b *fleet.Box, req protocol.ReadRequest) (res protocol.ReadResult, ok bool) {
	if hf, isHost := b.Sandbox().(sandbox.HostFiles); isHost {
		req.Raw = true
		var err error
		res, err = hostFiles.ReadVia(ctx, req, hf.OpenHostFile)
		ok = err == nil
	}
	g.countRead(ok)
	return res, ok
}

// OpenRegular opens a regular file of b's workspace on this host for an
// E2B download, and counts the read by where it goes: it fails where
// read_file would ask the runner, and the download then goes through
// the runner.
func (g *Toolbox) OpenRegular(b *fleet.Box, path string) (*os.File, fs.FileInfo, error) {
	hf, ok := b.Sandbox().(sandbox.HostFiles)
	if !ok {
		g.countRead(false)
		return nil, nil, errors.ErrUnsupported
	}
	f, fi, err := hostFiles.OpenVia(path, hf.OpenHostFile)
	g.countRead(err == nil)
	return f, fi, err
}

// countRead counts a file read by where it was served.
func (g *Toolbox) countRead(onHost bool) {
	via := metrics.ReadRunner
	if onHost {
		via = metrics.ReadHost
	}
	g.metrics.FileReads.WithLabelValues(via).Inc()
}
