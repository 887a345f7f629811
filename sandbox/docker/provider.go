package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/client"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/workspace"
)

// Paths inside the container. The runner is started as
// RunnerPath --socket ContainerSocketPath --workspace WorkspaceDir.
const (
	// RunnerPath is where the runner binary is mounted, read-only.
	RunnerPath = "/opt/sandgate/runner"
	// SocketDirPath is the container directory that holds the runner socket;
	// it is the sandbox's own host socket directory, bind-mounted.
	SocketDirPath = "/run/sandgate"
	// SocketName is the file name of the runner socket, in the container
	// and in the sandbox's host socket directory.
	SocketName = "runner.sock"
	// ContainerSocketPath is the runner socket as the runner sees it.
	ContainerSocketPath = SocketDirPath + "/" + SocketName
	// WorkspaceDir is the sandbox user's home and working directory.
	WorkspaceDir = "/workspace"
	// CAPath is where Config.CAFile is mounted, read-only.
	CAPath = "/opt/sandgate/ca.pem"
)

// Defaults for the zero fields of Config.
const (
	// DefaultImage is the image images/build.sh builds.
	DefaultImage = "sandgate/base:latest"
	// DefaultUser is the sandbox user of sandgate images (images/base).
	DefaultUser = "1000:1000"
	// DefaultInstance scopes a gateway that was given no instance name.
	DefaultInstance = "default"
)

// Config says how the provider creates sandboxes.
type Config struct {
	// RunnerPath is the host path of the static runner binary.
	RunnerPath string
	// SocketDir is the absolute host directory under which each sandbox
	// gets its socket directory SocketDir/<id>. New creates it 0700; an
	// existing one must already be ours and 0700.
	SocketDir string
	// Image is used when a Spec names none (default DefaultImage).
	Image string
	// User is the numeric "uid:gid" every process in a sandbox runs as
	// (default DefaultUser). Names are refused: they would be resolved in
	// the image, which the user may control.
	User string
	// Instance scopes this gateway's containers (label sandgate.instance);
	// Get, List and Remove never see another instance's sandboxes.
	Instance string
	// Runtime is an optional OCI runtime such as "runsc"; empty means the
	// engine's default.
	Runtime string
	// WorkspaceDir is the absolute host directory under which each
	// sandbox's workspace (a sparse ext4 image and its mount point) lives;
	// default "workspaces" beside SocketDir.
	WorkspaceDir string
	// WorkspaceBackend is auto (default: loop where the host can, else
	// tmpfs), loop or tmpfs; see sandbox/workspace.
	WorkspaceBackend workspace.Backend
	// LockDir holds one lock file per engine and instance: a live gateway
	// holds its instance's lock, so no other gateway reconciles (removes)
	// its sandboxes. Default DefaultLockDir().
	LockDir string
	// LockWait is how long New waits for another gateway to release the
	// instance, as when a restart overlaps the old process (default 10 s).
	LockWait time.Duration
	// Holder describes this gateway (address, var dir) in the lock file,
	// for the message a second gateway prints.
	Holder string
	// CAFile is an absolute host path of a PEM file of certificate
	// authorities every sandbox trusts besides its image's; empty: none.
	// It is mounted read-only and handed to the runner (--extra-ca).
	CAFile string
}

// namePattern bounds sandbox ids and instance names. They become a path
// component (SocketDir/<id>), a container name and label values, so they
// must not contain "/" and must not be "." or "..".
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// userPattern is a numeric uid:gid, as Docker passes it through unresolved.
var userPattern = regexp.MustCompile(`^[0-9]{1,10}:[0-9]{1,10}$`)

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Image == "" {
		c.Image = DefaultImage
	}
	if c.User == "" {
		c.User = DefaultUser
	}
	if c.Instance == "" {
		c.Instance = DefaultInstance
	}
	if c.WorkspaceDir == "" && c.SocketDir != "" {
		c.WorkspaceDir = filepath.Join(filepath.Dir(filepath.Clean(c.SocketDir)), "workspaces")
	}
	if c.LockDir == "" {
		c.LockDir = DefaultLockDir()
	}
	if c.LockWait == 0 {
		c.LockWait = 10 * time.Second
	}
	return c
}

// Validate checks that c, with defaults applied, can be used: a runner
// path, an absolute SocketDir, a numeric non-root User and a well-formed
// Instance.
// It does not touch the file system or the engine; New does.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.RunnerPath == "" {
		return errors.New("docker provider config: runner path is empty")
	}
	if !filepath.IsAbs(c.SocketDir) {
		return fmt.Errorf("docker provider config: socket dir %q must be an absolute path", c.SocketDir)
	}
	if !filepath.IsAbs(c.WorkspaceDir) {
		return fmt.Errorf("docker provider config: workspace dir %q must be an absolute path", c.WorkspaceDir)
	}
	if c.CAFile != "" && !filepath.IsAbs(c.CAFile) {
		return fmt.Errorf("docker provider config: CA file %q must be an absolute path", c.CAFile)
	}
	if _, err := workspace.ParseBackend(string(c.WorkspaceBackend)); err != nil {
		return fmt.Errorf("docker provider config: %w", err)
	}
	if _, _, err := parseUser(c.User); err != nil {
		return fmt.Errorf("docker provider config: %w", err)
	}
	if !namePattern.MatchString(c.Instance) {
		return fmt.Errorf("docker provider config: instance %q must match %s", c.Instance, namePattern)
	}
	return nil
}

// parseUser splits a numeric "uid:gid" and refuses root's uid and gid.
func parseUser(user string) (uid, gid int, err error) {
	if !userPattern.MatchString(user) {
		return 0, 0, fmt.Errorf("user %q must be numeric uid:gid", user)
	}
	u, g, _ := strings.Cut(user, ":")
	uid, errU := strconv.Atoi(u)
	gid, errG := strconv.Atoi(g)
	if errU != nil || errG != nil {
		return 0, 0, fmt.Errorf("user %q: uid or gid out of range", user)
	}
	if uid == 0 || gid == 0 {
		return 0, 0, fmt.Errorf("user %q: sandboxes never run as root or group root", user)
	}
	return uid, gid, nil
}

// Provider creates sandboxes as containers of one Docker Engine. It is
// safe for concurrent use.
type Provider struct {
	cli      *client.Client
	cfg      Config
	uid, gid int
	ws       *workspace.Manager
	lock     *instanceLock
	// engineRoot is the engine's data dir, where it keeps checkpoints
	// (checkpoint.go).
	engineRoot string
	log        *slog.Logger
}

var _ sandbox.Provider = (*Provider)(nil)

// New connects to the engine named by the environment (DOCKER_HOST etc.),
// checks that it answers and that the runner binary exists, creates
// cfg.SocketDir, sets up workspaces and takes the instance's lock: it
// fails, naming the holder, when another live gateway has the instance.
// Close releases what New took.
func New(ctx context.Context, cfg Config, log *slog.Logger) (_ *Provider, retErr error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	uid, gid, _ := parseUser(cfg.User) // checked by Validate
	runner, err := checkRunner(cfg.RunnerPath)
	if err != nil {
		return nil, err
	}
	cfg.RunnerPath = runner
	cfg.SocketDir = filepath.Clean(cfg.SocketDir)
	if err := sandbox.MakePrivateDir(cfg.SocketDir, "socket dir"); err != nil {
		return nil, err
	}

	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("%w: configure docker client: %v", sandbox.ErrUnavailable, err)
	}
	if _, err := cli.Ping(ctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: ping docker engine at %s: %v (start dockerd or set DOCKER_HOST)",
			sandbox.ErrUnavailable, cli.DaemonHost(), err)
	}
	defer func() {
		if retErr != nil {
			cli.Close()
		}
	}()
	log = log.With("provider", "docker", "instance", cfg.Instance)
	info, err := cli.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("identify docker engine: %w", engineErr(err))
	}
	// uid and gid are the sandbox user's ids on the host from here on:
	// what the socket dir and the workspaces are given (see userns.go).
	uid, gid, remapped, err := hostIDs(info, uid, gid)
	if err != nil {
		return nil, err
	}
	if euid := os.Geteuid(); euid != 0 && euid == uid {
		// A sealed socket dir is the gateway's (socketdir.go); were the
		// gateway the sandbox user, the sandbox could open it again.
		return nil, fmt.Errorf("docker provider: the gateway runs as uid %d, which is the sandbox user's uid on the host; run it as another user (or as root), or set a different sandbox user", euid)
	}
	if remapped {
		log.Info("the engine remaps user namespaces: the sandbox user's files are the host's remapped ids", "user", cfg.User, "host_uid", uid, "host_gid", gid)
	}
	lock, err := lockInstance(ctx, cli, info, cfg, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			lock.release()
		}
	}()
	ws, err := workspace.Open(ctx, workspace.Options{Root: filepath.Clean(cfg.WorkspaceDir), Backend: cfg.WorkspaceBackend, UID: uid, GID: gid, Logger: log})
	if err != nil {
		return nil, err
	}
	if ws.Durable() {
		log.Info("workspaces on disk: a sparse ext4 image per sandbox, loop-mounted", "dir", cfg.WorkspaceDir)
	} else {
		log.Warn("workspaces in RAM (tmpfs): they count against each sandbox's memory limit and are lost with the container", "reason", ws.Reason())
	}
	return &Provider{cli: cli, cfg: cfg, uid: uid, gid: gid, ws: ws, lock: lock, engineRoot: info.DockerRootDir, log: log}, nil
}

// WorkspaceDurable reports whether workspaces are on disk and outlive
// their container (the loop backend) rather than tmpfs in RAM.
func (p *Provider) WorkspaceDurable() bool { return p.ws.Durable() }

// WorkspaceBackend reports the workspace backend in use and, for the
// tmpfs fallback, why.
func (p *Provider) WorkspaceBackend() (workspace.Backend, string) {
	return p.ws.Backend(), p.ws.Reason()
}

// checkRunner returns the absolute path of the runner binary after checking
// that it is a regular file the sandbox user can execute: the bind mount
// keeps host permission bits, and the sandbox user is neither owner nor
// group on the host.
func checkRunner(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("resolve runner path %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %s does not exist (run `make build`)", sandbox.ErrRunnerMissing, abs)
	}
	if err != nil {
		return "", fmt.Errorf("check runner binary %s: %w", abs, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s is not a regular file (run `make build`)", sandbox.ErrRunnerMissing, abs)
	}
	if fi.Mode().Perm()&0o005 != 0o005 {
		return "", fmt.Errorf("check runner binary %s: mode %v is not readable and executable by others; the sandbox user could not start it (chmod 0755)", abs, fi.Mode().Perm())
	}
	return abs, nil
}

// Close releases the instance lock and the connection to the engine.
// Sandboxes keep running; a later gateway on the instance reconciles them.
func (p *Provider) Close() error {
	p.lock.release()
	return p.cli.Close()
}

// socketHostDir returns the sandbox's socket directory on the host. id must
// have passed namePattern, which keeps the result a direct child of
// SocketDir.
func (p *Provider) socketHostDir(id string) string {
	return filepath.Join(p.cfg.SocketDir, id)
}
