package code

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// language is how to run one language: the interpreters to try, in order,
// the snippet file's extension and environment defaults a request may
// override.
type language struct {
	bins []string
	ext  string
	env  map[string]string
}

// languages says how to run each of protocol.Languages; which names
// exist, and their aliases, is decided there.
var languages = map[protocol.Language]language{
	// Unbuffered, so that output streams while the snippet runs instead
	// of arriving in 4 KiB blocks or at exit.
	protocol.Python: {bins: []string{"python3"}, ext: ".py", env: map[string]string{"PYTHONUNBUFFERED": "1"}},
	protocol.Node:   {bins: []string{"node", "nodejs"}, ext: ".js"},
	protocol.Bash:   {bins: []string{"bash"}, ext: ".sh"},
}

// Run writes req.Code to a file under os.TempDir (removed when Run
// returns) and runs it with the language's interpreter through m.Run,
// which emits the events and decides the result. An unknown language is
// CodeInvalid; a language whose interpreter the image lacks is
// CodeUnsupported.
func Run(ctx context.Context, m *process.Manager, req protocol.CodeRequest, emit func(protocol.Event)) (protocol.ExecResult, error) {
	name, err := protocol.ParseLanguage(req.Language)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	lang, ok := languages[name]
	if !ok { // a language added to protocol.Languages but not here
		return protocol.ExecResult{}, protocol.Errorf(protocol.CodeUnsupported, "this runner cannot run %s; rebuild the gateway and the runner from the same source", name)
	}
	path, err := writeSnippet(req.Code, lang.ext)
	if err != nil {
		return protocol.ExecResult{}, err
	}
	defer os.Remove(path)

	exec := protocol.ExecRequest{
		Cwd:       req.Cwd,
		Env:       withDefaults(req.Env, lang.env),
		Stdin:     req.Stdin,
		TimeoutMs: req.TimeoutMs,
		OutputCap: req.OutputCap,
	}
	for _, bin := range lang.bins {
		exec.Argv = []string{bin, path}
		res, err := m.Run(ctx, exec, emit)
		if !errors.Is(err, process.ErrNoExecutable) {
			return res, err
		}
	}
	return protocol.ExecResult{}, protocol.Errorf(protocol.CodeUnsupported,
		"%s is not installed in this sandbox image (running %s code needs it); use an image that has it", strings.Join(lang.bins, " or "), name)
}

// writeSnippet writes code to a new file readable only by the runner's
// user, which is also the user the interpreter runs as.
func writeSnippet(code, ext string) (string, error) {
	f, err := os.CreateTemp("", "sandgate-code-*"+ext)
	if err != nil {
		return "", fmt.Errorf("create code file: %w", err)
	}
	_, err = f.WriteString(code)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write code file %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// withDefaults returns env with defaults added where env has no entry.
func withDefaults(env, defaults map[string]string) map[string]string {
	if len(defaults) == 0 {
		return env
	}
	out := make(map[string]string, len(env)+len(defaults))
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range env {
		out[k] = v
	}
	return out
}
