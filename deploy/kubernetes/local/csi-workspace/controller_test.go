package main

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestVolumeSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		required, limit int64
		want            int64
		code            codes.Code
	}{
		{"none asked", 0, 0, defaultSize, codes.OK},
		{"exact MiB", 64 * mib, 0, 64 * mib, codes.OK},
		{"rounded up to MiB", 64*mib + 1, 0, 65 * mib, codes.OK},
		{"at least minSize", 1, 0, minSize, codes.OK},
		{"limit only", 0, 100 * mib, 100 * mib, codes.OK},
		{"rounding capped by limit", 64*mib + 1, 64*mib + 10, 64*mib + 10, codes.OK},
		{"required over limit", 65 * mib, 64 * mib, 0, codes.OutOfRange},
		{"limit under minSize", 1, mib, 0, codes.OutOfRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := volumeSize(&csi.CapacityRange{RequiredBytes: tc.required, LimitBytes: tc.limit})
			if status.Code(err) != tc.code || got != tc.want {
				t.Errorf("volumeSize(%d, %d) = %d, %v; want %d, %s", tc.required, tc.limit, got, err, tc.want, tc.code)
			}
		})
	}
}

func TestCheckCapabilities(t *testing.T) {
	t.Parallel()
	mount := func(fs string, mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
		return &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fs}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
		}
	}
	block := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	for _, tc := range []struct {
		name string
		caps []*csi.VolumeCapability
		ok   bool
	}{
		{"ReadWriteOnce", []*csi.VolumeCapability{mount("", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)}, true},
		{"ReadWriteOncePod, ext4", []*csi.VolumeCapability{mount("ext4", csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER)}, true},
		{"xfs", []*csi.VolumeCapability{mount("xfs", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)}, false},
		{"ReadWriteMany", []*csi.VolumeCapability{mount("", csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)}, false},
		{"raw block", []*csi.VolumeCapability{block}, false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := checkCapabilities(tc.caps); (err == nil) != tc.ok {
				t.Errorf("checkCapabilities: %v; want ok %v", err, tc.ok)
			}
		})
	}
}

func TestReachable(t *testing.T) {
	t.Parallel()
	d := &driver{c: config{driver: "workspace.csi.sandgate.dev", node: "n1"}}
	on := func(node string) []*csi.Topology {
		return []*csi.Topology{{Segments: map[string]string{"workspace.csi.sandgate.dev/node": node}}}
	}
	for _, tc := range []struct {
		name string
		req  *csi.TopologyRequirement
		want bool
	}{
		{"no requirement", nil, true},
		{"this node preferred", &csi.TopologyRequirement{Preferred: on("n1")}, true},
		{"this node requisite", &csi.TopologyRequirement{Requisite: on("n1")}, true},
		{"another node", &csi.TopologyRequirement{Requisite: on("n2"), Preferred: on("n2")}, false},
	} {
		if got := d.reachable(tc.req); got != tc.want {
			t.Errorf("%s: reachable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
