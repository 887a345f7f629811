package runner

import (
	"bytes"
	"context"
	"io"

	"github.com/sandgate/sandgate/runner/code"
	"github.com/sandgate/sandgate/runner/codesearch"
	"github.com/sandgate/sandgate/runner/egress"
	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/httpreq"
	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/runner/watch"
)

// Browser drives the sandbox's browser (runner/browser implements it).
type Browser interface {
	// Do performs one browser action.
	Do(ctx context.Context, req protocol.BrowserRequest) (protocol.BrowserResult, error)
}

// Interpreter is the sandbox's stateful code interpreter (runner/interp
// implements it).
type Interpreter interface {
	// Stream executes one cell in the long-lived interpreter, emitting
	// its output as events while it runs when req.Stream asks for that.
	Stream(ctx context.Context, req protocol.InterpRequest, emit func(protocol.Event)) (protocol.InterpResult, error)
	// Restart replaces the interpreter with a fresh one.
	Restart(ctx context.Context, req protocol.InterpRestartRequest) (protocol.InterpResult, error)
}

// Services are what the runner dispatches to. Files, Processes and Info
// are required; an optional service left nil leaves its operations
// unsupported (the gateway then says the image lacks it).
type Services struct {
	Files       *files.Service
	Processes   *process.Manager
	Info        func(context.Context) protocol.Info
	Browser     Browser
	Interpreter Interpreter
	// Egress carries the sandbox's proxied connections to the gateway;
	// nil refuses the gateway's egress upgrade.
	Egress *egress.Link
	// HTTP makes http_request's requests through the sandbox's proxy.
	HTTP *httpreq.Client
	// Watch reports file changes (protocol.OpWatch).
	Watch *watch.Watcher
	// CodeSearch runs search_code's lexical and structural strategies.
	CodeSearch *codesearch.Service
	// Gate is the runner's listener; with it the runner serves
	// protocol.OpCheckpointPrepare.
	Gate *Gate
}

// handlers wires every operation to its implementation.
func handlers(svc Services) registry {
	fs, pm := svc.Files, svc.Processes
	r := registry{}
	r.add(protocol.OpInfo, unary(func(ctx context.Context, _ struct{}) (protocol.Info, error) { return svc.Info(ctx), nil }))
	if svc.Browser != nil {
		r.add(protocol.OpBrowser, unary(svc.Browser.Do))
	}
	if svc.HTTP != nil {
		r.add(protocol.OpHTTPRequest, unary(svc.HTTP.Do))
	}
	if svc.Interpreter != nil {
		r.add(protocol.OpInterpRun, streaming(svc.Interpreter.Stream))
		r.add(protocol.OpInterpRestart, unary(svc.Interpreter.Restart))
	}

	if svc.Watch != nil {
		r.add(protocol.OpWatch, watchOp(svc.Watch))
	}
	if svc.CodeSearch != nil {
		r.add(protocol.OpCodeSearch, unary(svc.CodeSearch.Search))
	}
	if svc.Gate != nil {
		r.add(protocol.OpCheckpointPrepare, checkpointPrepare(svc.Gate))
	}

	r.add(protocol.OpFileRead, fileRead(fs))
	r.add(protocol.OpFileWrite, fileWrite(fs))
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
	r.add(protocol.OpProcessOutput, unary(pm.Output))
	r.add(protocol.OpProcessWrite, unary(func(_ context.Context, req protocol.ProcessWriteRequest) (protocol.ProcessInfo, error) {
		return pm.Write(req)
	}))
	r.add(protocol.OpProcessSignal, unary(func(_ context.Context, req protocol.ProcessSignalRequest) (protocol.ProcessInfo, error) {
		return pm.Signal(req)
	}))
	return r
}

// fileRead serves file.read; a request with Raw set gets content of
// protocol.PayloadMinBytes or more as the result's payload, and smaller
// content in Content as usual.
func fileRead(fs *files.Service) handler {
	return func(ctx context.Context, r protocol.Request, _ func(protocol.Event)) (any, error) {
		var req protocol.ReadRequest
		if err := decodeRequest(r, &req); err != nil {
			return nil, err
		}
		res, err := fs.Read(ctx, req)
		if err != nil || !req.Raw {
			return res, err
		}
		if len(res.Data) < protocol.PayloadMinBytes {
			files.Inline(&res)
			return res, nil
		}
		data := res.Data
		res.Data = nil
		return payloadResult{result: res, payload: data}, nil
	}
}

// fileWrite serves file.write, whose content may come as the request's
// payload instead of WriteRequest.Content.
func fileWrite(fs *files.Service) handler {
	return func(ctx context.Context, r protocol.Request, _ func(protocol.Event)) (any, error) {
		var req protocol.WriteRequest
		if err := decode(r.Params, &req); err != nil {
			return nil, err
		}
		if r.Payload != nil {
			if req.Content != "" {
				return nil, protocol.Errorf(protocol.CodeInvalid, "file.write: send the content either as the payload or in the parameters, not both")
			}
			req.Data = r.Payload
		}
		return fs.Write(ctx, req)
	}
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
