// Package proxy is the front end of a sandbox's egress proxy, served by
// the runner on 127.0.0.1:3128 inside the sandbox. It reads what a client
// asks for (HTTP CONNECT, an absolute-URI HTTP request, or SOCKS5
// CONNECT, told apart by the first byte), hands the destination to an
// Opener, which asks the gateway, and relays bytes. It applies no policy
// and resolves no names: the gateway decides everything.
package proxy
