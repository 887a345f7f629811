package egress

import (
	"net"
	"strings"
)

// Env returns the environment that points a sandbox's programs at its
// proxy at addr (host:port): the conventional proxy variables in both
// cases, Node's opt-in to them, Java's system properties, and ssh and
// git's proxy commands through `runner connect` (runner is the runner's
// path inside the sandbox), so no nc or socat is needed in the image.
// Programs that ignore all of these have no network at all.
func Env(addr, runner string) []string {
	host, port, _ := net.SplitHostPort(addr)
	url := "http://" + addr
	env := []string{
		"NO_PROXY=localhost,127.0.0.1,::1",
		"NODE_USE_ENV_PROXY=1",
		"JAVA_TOOL_OPTIONS=" + strings.Join([]string{
			"-Dhttp.proxyHost=" + host, "-Dhttp.proxyPort=" + port,
			"-Dhttps.proxyHost=" + host, "-Dhttps.proxyPort=" + port,
			"-Dhttp.nonProxyHosts=localhost|127.0.0.1|[::1]",
		}, " "),
		// git runs its proxy command through the shell, with host and
		// port as arguments; ssh expands %h and %p itself.
		"GIT_PROXY_COMMAND=" + runner + " connect",
		"GIT_SSH_COMMAND=ssh -o ProxyCommand='" + runner + " connect %h %p'",
	}
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "GRPC_PROXY"} {
		env = append(env, name+"="+url)
	}
	// ALL_PROXY is SOCKS for the tools that read it for anything but
	// HTTP (curl uses socks5h so the name, not an address, is sent).
	env = append(env, "ALL_PROXY=socks5h://"+addr)
	out := make([]string, 0, 2*len(env))
	for _, kv := range env {
		out = append(out, kv)
		if k, v, _ := strings.Cut(kv, "="); strings.HasSuffix(k, "_PROXY") {
			out = append(out, strings.ToLower(k)+"="+v)
		}
	}
	return out
}
