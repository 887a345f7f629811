package e2b

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

// envRestoreTimeout bounds restoring the environment after a cell, which
// runs even when the request has ended.
const envRestoreTimeout = 30 * time.Second

// runCell runs one cell with env set in os.environ for its duration,
// passing its output events to onOutput while it runs when the runner can
// stream them (otherwise they are in the result).
//
// The interpreter is one long-lived process, so env_vars are applied by
// a preamble cell that saves the variables' values and sets them, and
// undone by a postamble that restores them, whatever the cell did. The
// runner runs one cell at a time, but another request's cell may run
// between ours and a preamble, and so see these variables; a sandbox's
// callers share one interpreter anyway. Child processes the cell starts
// inherit them, as they would on E2B.
func runCell(ctx context.Context, c *protocol.Client, req protocol.InterpRequest, env map[string]string, onOutput func(protocol.Event)) (protocol.InterpResult, error) {
	var pre protocol.InterpResult
	if len(env) > 0 {
		err := c.Call(ctx, protocol.OpInterpRun, protocol.InterpRequest{Language: req.Language, Code: envPreamble(env)}, &pre)
		if err != nil {
			return pre, fmt.Errorf("set env_vars: %w", err)
		}
		if pre.ErrorName != "" || pre.TimedOut {
			return pre, fmt.Errorf("set env_vars: %s %s", pre.Error, pre.Message)
		}
		defer restoreEnv(ctx, c, req.Language)
	}
	res, err := runStreamed(ctx, c, req, onOutput)
	if err != nil {
		return res, err
	}
	if pre.Restarted {
		// The preamble met a new interpreter: the cell's caller must
		// learn that earlier state is gone, and the count restarts.
		res.Restarted = true
		res.Message = strings.TrimPrefix(pre.Message+"; "+res.Message, "; ")
		res.Message = strings.TrimSuffix(res.Message, "; ")
	}
	return res, nil
}

// runStreamed runs req, streaming its output to onOutput when the runner
// announces it can; an older runner answers it all in the result.
func runStreamed(ctx context.Context, c *protocol.Client, req protocol.InterpRequest, onOutput func(protocol.Event)) (protocol.InterpResult, error) {
	var res protocol.InterpResult
	if !c.Supports(protocol.FeatureInterpStream) {
		return res, c.Call(ctx, protocol.OpInterpRun, req, &res)
	}
	req.Stream = true
	raw, err := c.Stream(ctx, protocol.OpInterpRun, req, onOutput)
	if err != nil {
		return res, err
	}
	if err := protocol.Unmarshal(raw, &res); err != nil {
		return res, fmt.Errorf("decode the cell's result: %w", err)
	}
	return res, nil
}

// restoreEnv runs the postamble, under its own timeout even when the
// request's context has ended: a client that goes away must not leave
// its variables set for the next caller. If the interpreter was restarted
// meanwhile, its environment is fresh and the postamble does nothing.
func restoreEnv(ctx context.Context, c *protocol.Client, lang string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), envRestoreTimeout)
	defer cancel()
	_ = c.Call(ctx, protocol.OpInterpRun, protocol.InterpRequest{Language: lang, Code: envPostamble}, nil)
}

// envSavedName holds the saved values between preamble and postamble.
const envSavedName = "_sandgate_saved_env"

// envPreamble is Python that saves the current values of env's keys and
// sets them. The values travel as a JSON string literal, which is a valid
// Python string literal, so no value can break out of it.
func envPreamble(env map[string]string) string {
	doc, _ := json.Marshal(env)
	lit, _ := json.Marshal(string(doc))
	return fmt.Sprintf("import os as _sg_os, json as _sg_json\n_sg_env = _sg_json.loads(%s)\n%s = {k: _sg_os.environ.get(k) for k in _sg_env}\n_sg_os.environ.update(_sg_env)\ndel _sg_os, _sg_json, _sg_env\n", lit, envSavedName)
}

// envPostamble restores what envPreamble saved.
const envPostamble = "import os as _sg_os\nfor _sg_k, _sg_v in globals().pop('" + envSavedName + "', {}).items():\n" +
	"    if _sg_v is None:\n        _sg_os.environ.pop(_sg_k, None)\n    else:\n        _sg_os.environ[_sg_k] = _sg_v\n" +
	"globals().pop('_sg_k', None); globals().pop('_sg_v', None)\ndel _sg_os\n"

// checkEnvVars refuses what os.environ cannot hold, so that the preamble
// cannot fail on the caller's input.
func checkEnvVars(env map[string]string) error {
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return fmt.Errorf("env_vars: %q cannot be an environment variable; names must be non-empty without '=' or NUL, and values without NUL: %w", k, ErrInvalid)
		}
	}
	return nil
}
