// Command csi-workspace is the local cluster's CSI driver for sandbox
// workspaces: each volume is a sandbox/workspace workspace (a sparse ext4
// image, loop-mounted), so its size is enforced by the file system and a
// writer past it gets ENOSPC, never an eviction. One host process serves
// the controller and the node service on one socket, and registers itself
// with the kubelet through the kubelet's plugins_registry directory (what
// node-driver-registrar does as a sidecar elsewhere). csi-provisioner
// turns PersistentVolumeClaims into CreateVolume calls on the same socket.
//
// Why our own driver and not TopoLVM or OpenEBS LVM LocalPV: both need
// device-mapper, which the kernel of these machines lacks (built without
// CONFIG_BLK_DEV_DM and without module loading), while loop devices and
// ext4 are there and are what the Docker provider's workspaces already
// use. It is a single-node driver: volumes live on the node that made
// them, and the PersistentVolume says so through its topology.
//
// A module of its own, so that the project's go.mod does not take on the
// CSI spec and the kubelet's registration API; it uses the project's
// sandbox/workspace through a replace. build-csi.sh builds it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/sandgate/sandgate/sandbox/workspace"
)

// version is reported by GetPluginInfo.
const version = "0.1.0"

// config is the driver's command line.
type config struct {
	driver    string // CSI driver name, as in the CSIDriver object
	node      string // this node's name
	csiSocket string // where the CSI services listen, an absolute path
	registry  string // the kubelet's plugins_registry directory
	root      string // where the volumes' images and mounts live
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "csi-workspace:", err)
		os.Exit(1)
	}
}

func parse(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("csi-workspace", flag.ContinueOnError)
	fs.StringVar(&c.driver, "driver", "workspace.csi.sandgate.dev", "CSI driver name")
	fs.StringVar(&c.node, "node", "", "this node's name")
	fs.StringVar(&c.csiSocket, "csi-socket", "", "absolute path of the CSI socket to serve")
	fs.StringVar(&c.registry, "registry", "", "the kubelet's plugins_registry directory")
	fs.StringVar(&c.root, "root", "", "absolute directory for the volumes")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for _, p := range []string{c.csiSocket, c.registry, c.root} {
		if !filepath.IsAbs(p) {
			return c, errors.New("-csi-socket, -registry and -root must be absolute paths")
		}
	}
	if c.node == "" {
		return c, errors.New("-node is required")
	}
	return c, nil
}

func run(ctx context.Context, args []string) error {
	c, err := parse(args)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	m, err := workspace.Open(ctx, workspace.Options{Root: c.root, Backend: workspace.Loop, Logger: log})
	if err != nil {
		return err
	}
	d := &driver{c: c, m: m, log: log}
	csiSrv := grpc.NewServer(grpc.UnaryInterceptor(d.logErrors))
	csi.RegisterIdentityServer(csiSrv, d)
	csi.RegisterControllerServer(csiSrv, d)
	csi.RegisterNodeServer(csiSrv, d)
	regSrv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(regSrv, registrar{c: c, log: log})

	csiLn, err := listen(c.csiSocket)
	if err != nil {
		return err
	}
	// The kubelet dials the registration socket as soon as it appears, and
	// then the CSI socket: that one must already accept.
	regLn, err := listen(filepath.Join(c.registry, c.driver+"-reg.sock"))
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- csiSrv.Serve(csiLn) }()
	go func() { errc <- regSrv.Serve(regLn) }()
	log.Info("serving", "driver", c.driver, "csi_socket", c.csiSocket, "root", c.root)
	select {
	case <-ctx.Done():
		err = nil
	case err = <-errc:
	}
	// Stopping closes the listeners, which removes the sockets; the
	// kubelet then unregisters the plugin. Mounts stay: pods keep their
	// volumes while the driver is away.
	regSrv.Stop()
	csiSrv.Stop()
	return err
}

// listen listens on a unix socket at path, replacing one an earlier run
// left behind.
func listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return ln, nil
}

// driver implements the CSI identity, controller and node services.
type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer
	c   config
	m   *workspace.Manager
	log *slog.Logger
}

// logErrors logs every failed call: the sidecars and the kubelet retry
// them, and the driver's log is where an operator looks.
func (d *driver) logErrors(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	if err != nil {
		d.log.Error("call failed", "method", info.FullMethod, "error", err)
	}
	return resp, err
}
