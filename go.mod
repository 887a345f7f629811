module github.com/sandgate/sandgate

go 1.26.8

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/containerd/cgroups/v3 v3.1.3 // indirect
	github.com/docker/docker v28.5.2+incompatible // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mark3labs/mcp-go v1.2.1 // indirect
	github.com/moby/sys/userns v0.1.0 // indirect
	github.com/zitadel/oidc/v3 v3.49.2 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)
