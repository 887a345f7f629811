package runner

import (
	"bytes"
	"context"
	"io"

	"github.com/sandgate/sandgate/runner/code"
	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// handlers wires every operation to its implementation.
func handlers(fs *files.Service, pm *process.Manager, info func(context.Context) protocol.Info) registry {
	r := registry{}
	r.add(protocol.OpInfo, unary(func(ctx context.Context, _ struct{}) (protocol.Info, error) { return info(ctx), nil }))

	r.add(protocol.OpFileRead, unary(fs.Read))
	r.add(protocol.OpFileWrite, unary(fs.Write))
	r.add(protocol.OpFileEdit, unary(fs.Edit))
	r.add(protocol.OpFileList, unary(fs.List))
	r.add(protocol.OpFileStat, unary(fs.Stat))
	r.add(protocol.OpFileSearch, unary(fs.Search))
	r.add(protocol.OpFileMkdir, unary(fs.Mkdir))
	r.add(protocol.OpFileMove, unary(fs.Move))
	r.add(protocol.OpFileRemove, unary(fs.Remove))

	r.add(protocol.OpExec, streaming(pm.Run))
	r.add(protocol.OpCode, streaming(func(ctx context.Context, req protocol.CodeRequest, emit func(protocol.Event)) (protocol.ExecResult, error) {
		return code.Run(ctx, pm, req, emit)
	}))

	r.add(protocol.OpProcessStart, unary(func(_ context.Context, req protocol.ExecRequest) (protocol.ProcessInfo, error) { return pm.Start(req) }))
	r.add(protocol.OpProcessList, unary(func(context.Context, struct{}) (protocol.ProcessList, error) { return pm.List(), nil }))
	r.add(protocol.OpProcessOutput, unary(func(_ context.Context, req protocol.ProcessOutputRequest) (protocol.ProcessOutput, error) {
		return pm.Output(req)
	}))
	r.add(protocol.OpProcessWrite, unary(func(_ context.Context, req protocol.ProcessWriteRequest) (protocol.ProcessInfo, error) {
		return pm.Write(req)
	}))
	r.add(protocol.OpProcessSignal, unary(func(_ context.Context, req protocol.ProcessSignalRequest) (protocol.ProcessInfo, error) {
		return pm.Signal(req)
	}))
	return r
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
