// Package protocol defines the wire protocol between the gateway and the
// runner inside a sandbox, and the gateway-side client.
//
// One websocket connection (over the sandbox's unix socket) carries many
// concurrent requests. Every Request has a connection-unique ID; the runner
// answers with zero or more non-terminal Events (stdout, stderr)
// and exactly one terminal Event of type "end" that carries either a Result
// or an Error. A request is cancelled by sending a Request with Op "cancel"
// whose params name the target ID; the target still ends with an "end"
// event (usually with a canceled error or a killed process).
//
// The protocol version travels in the VersionHeader of the websocket
// upgrade request; a runner that speaks another version refuses the upgrade
// with HTTP 426 and a message saying both versions.
//
// This package imports no other package of this module: the runner and the
// gateway both depend on it, never the other way round.
package protocol
