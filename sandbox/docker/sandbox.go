package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"

	"github.com/sandgate/sandgate/sandbox"
)

// handle is one sandbox of a Provider. It holds no resources: Get can make
// a new one at any time, and several may exist for the same sandbox.
type handle struct {
	p    *Provider
	info sandbox.Info
	sock string // host path of the runner socket
}

var (
	_ sandbox.Sandbox   = (*handle)(nil)
	_ sandbox.HostFiles = (*handle)(nil)
)

// ID returns the sandbox id.
func (h *handle) ID() string { return h.info.ID }

// Info describes the sandbox as it was when the handle was made.
func (h *handle) Info() sandbox.Info { return h.info }

// Dial opens a new connection to the runner. A missing socket means the
// sandbox was removed, and is reported as ErrNotFound.
func (h *handle) Dial(ctx context.Context) (net.Conn, error) {
	conn, err := dialSocket(ctx, h.sock)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("dial runner of sandbox %s: %w: %w", h.info.ID, sandbox.ErrNotFound, err)
	}
	if err != nil {
		return nil, fmt.Errorf("dial runner of sandbox %s: %w", h.info.ID, err)
	}
	return conn, nil
}

// OpenHostFile opens a file of the sandbox's workspace from the host side;
// see sandbox.HostFiles and workspace.Manager.OpenAsUser.
func (h *handle) OpenHostFile(path string) (*os.File, error) {
	name, ok := strings.CutPrefix(path, WorkspaceDir+"/")
	if !ok || !h.info.WorkspaceDurable {
		return nil, errors.ErrUnsupported
	}
	return h.p.ws.OpenAsUser(h.info.ID, name)
}

// Destroy removes the sandbox; see Provider.Remove.
func (h *handle) Destroy(ctx context.Context) error {
	return h.p.Remove(ctx, h.info.ID)
}
