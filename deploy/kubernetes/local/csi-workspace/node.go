package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NodeGetInfo names this node and its topology, which the kubelet turns
// into the node label that volumes' node affinity matches.
func (d *driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.c.node, AccessibleTopology: d.topology()[0]}, nil
}

// NodeGetCapabilities: no staging (a publish is one bind mount), and
// ReadWriteOncePod as on the controller side.
func (d *driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{
		Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{
			Type: csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
		}},
	}}}, nil
}

// NodePublishVolume bind-mounts the workspace's mount (mounted again from
// its image if the host lost it) at the pod's target path, nosuid and
// nodev, read-only if asked. Idempotent: a target already mounted is done.
func (d *driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	if id == "" || !filepath.IsAbs(target) {
		return nil, status.Error(codes.InvalidArgument, "volume id and an absolute target path are required")
	}
	if err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	src, err := d.m.Ready(id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.NotFound, "volume %s: not found", id)
	} else if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s: %v", id, err)
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "create target %s: %v", target, err)
	}
	if mounted, err := isMountPoint(target); err != nil {
		return nil, status.Errorf(codes.Internal, "check target %s: %v", target, err)
	} else if mounted {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := bindMount(src, target, req.GetReadonly()); err != nil {
		return nil, status.Errorf(codes.Internal, "publish volume %s: %v", id, err)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume unmounts the target and removes its directory; the
// workspace stays mounted on the host for the next pod.
func (d *driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	target := req.GetTargetPath()
	if req.GetVolumeId() == "" || !filepath.IsAbs(target) {
		return nil, status.Error(codes.InvalidArgument, "volume id and an absolute target path are required")
	}
	mounted, err := isMountPoint(target)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "check target %s: %v", target, err)
	}
	if mounted {
		if err := unix.Unmount(target, unix.UMOUNT_NOFOLLOW); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "remove target %s: %v", target, err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// bindMount mounts src at target. A bind mount keeps the source's file
// system but not its per-mount flags: they are set by a remount.
func bindMount(src, target string, readonly bool) error {
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", src, target, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_NOSUID | unix.MS_NODEV)
	if readonly {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount("", target, "", flags, ""); err != nil {
		_ = unix.Unmount(target, unix.MNT_DETACH)
		return fmt.Errorf("remount %s: %w", target, err)
	}
	return nil
}

// isMountPoint reports whether path is mounted on, comparing its device
// with its parent's (a bind of the same file system would look alike,
// but a target is never bound from its own parent's file system).
func isMountPoint(path string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return false, err
	}
	if err := unix.Lstat(filepath.Dir(path), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}
