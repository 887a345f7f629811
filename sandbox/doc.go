// Package sandbox defines what the gateway needs from a sandbox backend:
// a Provider that creates and finds sandboxes, and a Sandbox the gateway
// can dial to reach the runner inside it. Implementations live in
// subpackages (sandbox/docker). Errors are classified by the sentinels in
// errors.go so the gateway can map them to user messages.
package sandbox
