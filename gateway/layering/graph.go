package layering

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// Graph maps each package's import path to the import paths its
// non-test files import directly.
type Graph map[string][]string

// Load returns the import graph of the packages matching patterns and of
// everything they depend on, as `go list -deps` reports it for linux
// without cgo, the way the binaries are built. It runs the go command
// found on PATH in the current directory, which must be inside the module.
func Load(ctx context.Context, patterns ...string) (Graph, error) {
	args := append([]string{"list", "-deps", "-json=ImportPath,Imports,Error"}, patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %v: %w: %s", patterns, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return decodeList(out)
}

// decodeList reads go list's stream of JSON objects.
func decodeList(out []byte) (Graph, error) {
	g := Graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Error      *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return g, nil
		} else if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		g[p.ImportPath] = p.Imports
	}
}
