package main

import (
	"context"
	"errors"
	"io/fs"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const (
	mib = 1 << 20
	// minSize is the smallest volume: ext4 needs a few MiB of its own.
	minSize = 8 * mib
	// defaultSize is a claim's size when it asks for none.
	defaultSize = 1 << 30
)

// topologyKey is the node label the kubelet sets from NodeGetInfo and the
// PersistentVolume's node affinity names: a volume lives on its node.
func (d *driver) topologyKey() string { return d.c.driver + "/node" }

func (d *driver) topology() []*csi.Topology {
	return []*csi.Topology{{Segments: map[string]string{d.topologyKey(): d.c.node}}}
}

// ControllerGetCapabilities: volumes are created and deleted, and may be
// claimed ReadWriteOncePod (which needs SINGLE_NODE_MULTI_WRITER).
func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	rpc := func(t csi.ControllerServiceCapability_RPC_Type) *csi.ControllerServiceCapability {
		return &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}}
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{
		rpc(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME),
		rpc(csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER),
	}}, nil
}

// CreateVolume makes a workspace named after the request (the claim's
// PersistentVolume name), size bytes of ext4. It is idempotent: a retry
// after a lost answer finds the workspace there and returns it.
func (d *driver) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	if !d.reachable(req.GetAccessibilityRequirements()) {
		return nil, status.Errorf(codes.ResourceExhausted, "volumes of %s live on node %s only", d.c.driver, d.c.node)
	}
	size, err := volumeSize(req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	vol := &csi.Volume{VolumeId: req.GetName(), CapacityBytes: size, AccessibleTopology: d.topology()}
	if _, err := d.m.Ready(req.GetName()); err == nil {
		return &csi.CreateVolumeResponse{Volume: vol}, nil
	}
	if _, err := d.m.Create(ctx, req.GetName(), size); err != nil {
		return nil, status.Errorf(codes.Internal, "create volume %s: %v", req.GetName(), err)
	}
	d.log.Info("created volume", "volume_id", req.GetName(), "bytes", size)
	return &csi.CreateVolumeResponse{Volume: vol}, nil
}

// DeleteVolume unmounts and deletes the workspace; a missing one is done.
// Kubernetes deletes a PersistentVolume only once no pod uses it.
func (d *driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id is required")
	}
	if err := d.m.Remove(req.GetVolumeId()); err != nil {
		return nil, status.Errorf(codes.Internal, "delete volume %s: %v", req.GetVolumeId(), err)
	}
	d.log.Info("deleted volume", "volume_id", req.GetVolumeId())
	return &csi.DeleteVolumeResponse{}, nil
}

// ValidateVolumeCapabilities confirms what CreateVolume accepts.
func (d *driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if _, err := d.m.Ready(req.GetVolumeId()); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, status.Errorf(codes.NotFound, "volume %s: not found", req.GetVolumeId())
		}
		return nil, status.Errorf(codes.Internal, "volume %s: %v", req.GetVolumeId(), err)
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: req.GetVolumeCapabilities(),
	}}, nil
}

// checkCapabilities accepts mounted (not raw block) volumes used from one
// node: the image is an ext4 file system mounted once, on this node.
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	for _, c := range caps {
		if c.GetMount() == nil {
			return status.Error(codes.InvalidArgument, "only mounted volumes (volumeMode: Filesystem) are supported")
		}
		if fs := c.GetMount().GetFsType(); fs != "" && fs != "ext4" {
			return status.Errorf(codes.InvalidArgument, "file system %q: only ext4", fs)
		}
		switch c.GetAccessMode().GetMode() {
		case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER,
			csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY:
		default:
			return status.Errorf(codes.InvalidArgument, "access mode %s: only single-node modes (ReadWriteOnce, ReadWriteOncePod)", c.GetAccessMode().GetMode())
		}
	}
	return nil
}

// reachable reports whether this node satisfies the topology a claim
// asks for (none asked is fine).
func (d *driver) reachable(req *csi.TopologyRequirement) bool {
	if req == nil || len(req.GetRequisite())+len(req.GetPreferred()) == 0 {
		return true
	}
	for _, t := range append(req.GetRequisite(), req.GetPreferred()...) {
		if t.GetSegments()[d.topologyKey()] == d.c.node {
			return true
		}
	}
	return false
}

// volumeSize is the size to make: the required bytes rounded up to whole
// MiB, at least minSize, within the limit.
func volumeSize(r *csi.CapacityRange) (int64, error) {
	want, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if want == 0 {
		want = min(defaultSize, limit)
		if limit == 0 {
			want = defaultSize
		}
	}
	size := max((want+mib-1)/mib*mib, minSize)
	if limit > 0 && size > limit {
		if want > limit || limit < minSize {
			return 0, status.Errorf(codes.OutOfRange, "capacity: want %d bytes, limit %d (the smallest volume is %d)", want, limit, minSize)
		}
		size = limit
	}
	return size, nil
}
