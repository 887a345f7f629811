module github.com/sandgate/sandgate/deploy/kubernetes/local/csi-workspace

go 1.26.8

require (
	github.com/container-storage-interface/spec v1.10.0
	github.com/sandgate/sandgate v0.0.0
	golang.org/x/sys v0.49.0
	google.golang.org/grpc v1.72.1
	google.golang.org/protobuf v1.36.12
	k8s.io/kubelet v0.34.4
)

require (
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250303144028-a0af3efb3deb // indirect
)

// The driver's volumes are the project's workspaces.
replace github.com/sandgate/sandgate => ../../../..
