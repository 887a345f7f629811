package gateway_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// notes collects a client's notifications of one method.
type notes struct {
	mu   sync.Mutex
	got  []mcp.JSONRPCNotification
	cond chan struct{}
}

func collect(c *client.Client) *notes {
	n := &notes{cond: make(chan struct{}, 1)}
	c.OnNotification(func(note mcp.JSONRPCNotification) {
		n.mu.Lock()
		n.got = append(n.got, note)
		n.mu.Unlock()
		select {
		case n.cond <- struct{}{}:
		default:
		}
	})
	return n
}

// has reports whether a notification of method (with uri, if not "") came.
func (n *notes) has(method, uri string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.ContainsFunc(n.got, func(note mcp.JSONRPCNotification) bool {
		return note.Method == method && (uri == "" || note.Params.AdditionalFields["uri"] == uri)
	})
}

// waitFor polls with poke (which may send a request that carries the
// notification back) until a notification of method and uri came.
func (n *notes) waitFor(t *testing.T, method, uri string, poke func()) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !n.has(method, uri) {
		poke()
		select {
		case <-n.cond:
		case <-time.After(300 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no %s for %q", method, uri)
		}
	}
}

// TestLocalResourceSubscribeLegacy: a legacy session subscribed to a file
// is told when a run_shell edits it, and when its workspace's listing
// changes; another principal's session is told nothing. This client
// opens no standalone GET stream (TestLocalStandaloneResourceUpdated
// does), so notifications come on the session's next response stream:
// the test pings.
func TestLocalResourceSubscribeLegacy(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := legacyClient(t, tg.URL)
	got := collect(c)
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "watched.txt", "content": "v1"}))
	var uri string
	for _, u := range listURIs(t, c) {
		if strings.HasSuffix(u, "/watched.txt") {
			uri = u
		}
	}
	if err := c.Subscribe(t.Context(), subscribeReq(uri)); err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
	other := legacyClient(t, tg.URL)
	otherGot := collect(other)
	if err := other.Subscribe(t.Context(), subscribeReq(uri)); !errors.Is(err, mcp.ErrResourceNotFound) {
		t.Fatalf("another session subscribing to this session's sandbox: %v, want -32002", err)
	}
	ping := func() { _ = c.Ping(t.Context()) }
	// The watch starts asynchronously: edit until a change is seen.
	got.waitFor(t, mcp.MethodNotificationResourceUpdated, uri, func() {
		shell(t, c, "echo more >> watched.txt", nil)
		ping()
	})
	got.waitFor(t, mcp.MethodNotificationResourcesListChanged, "", func() {
		shell(t, c, "touch new-$RANDOM", nil)
		ping()
	})
	_ = other.Ping(t.Context())
	if otherGot.has(mcp.MethodNotificationResourceUpdated, uri) {
		t.Error("another session was told of this session's file")
	}
	if err := c.Unsubscribe(t.Context(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}}); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
}

// TestLocalResourceListen: a 2026-07-28 client's subscriptions/listen
// stream receives resources/updated for the file it named when a
// run_shell edits it, and list_changed when the workspace's listing does.
func TestLocalResourceListen(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := modernClient(t, tg.URL)
	got := collect(c)
	id := newSandboxID(t, c)
	write(t, c, id, "w.txt", "v1", "")
	uri := "sandbox://" + id + "/w.txt"
	stop, err := c.ListenAsync(t.Context(), mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}, ResourcesListChanged: true}, func(err error) { t.Errorf("listen: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	got.waitFor(t, mcp.MethodNotificationResourceUpdated, uri, func() {
		shell(t, c, "echo more >> w.txt", map[string]any{"sandbox_id": id})
	})
	got.waitFor(t, mcp.MethodNotificationResourcesListChanged, "", func() {
		shell(t, c, "touch new-$RANDOM", map[string]any{"sandbox_id": id})
	})
}

func subscribeReq(uri string) mcp.SubscribeRequest {
	return mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}
}

// reset forgets the notifications received so far.
func (n *notes) reset() {
	n.mu.Lock()
	n.got = nil
	n.mu.Unlock()
}

// TestLocalResourceWatchSurvivesReplacement: when a sandbox's runner dies
// and is replaced, its watch is set up again in the new one.
func TestLocalResourceWatchSurvivesReplacement(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := modernClient(t, tg.URL)
	got := collect(c)
	id := newSandboxID(t, c)
	write(t, c, id, "w.txt", "v1", "")
	uri := "sandbox://" + id + "/w.txt"
	stop, err := c.ListenAsync(t.Context(), mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	edit := func() { shell(t, c, "echo more >> w.txt", map[string]any{"sandbox_id": id}) }
	got.waitFor(t, mcp.MethodNotificationResourceUpdated, uri, edit)
	if err := tg.Local.Kill(id); err != nil {
		t.Fatal(err)
	}
	edit() // replaces the sandbox's runner
	got.reset()
	got.waitFor(t, mcp.MethodNotificationResourceUpdated, uri, edit)
}

// TestResourceListenDocker: in a real container, a run_shell that edits a
// watched file notifies the subscriptions/listen stream (inotify on the
// workspace's disk, through the injected runner).
func TestResourceListenDocker(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := modernClient(t, tg.URL)
	got := collect(c)
	id := newSandboxID(t, c)
	write(t, c, id, "w.txt", "v1", "")
	uri := "sandbox://" + id + "/w.txt"
	stop, err := c.ListenAsync(t.Context(), mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	got.waitFor(t, mcp.MethodNotificationResourceUpdated, uri, func() {
		shell(t, c, "echo more >> w.txt", map[string]any{"sandbox_id": id})
	})
}

// TestLocalListenNeedsFilesRead: a 2026-07-28 subscriptions/listen naming
// a sandbox file needs sandbox:files:read, as resources/subscribe does. A
// token of sandbox:exec alone, of the file's owner, is refused with 403
// naming the scope and receives no resources/updated; the same owner's
// token with the scope does.
func TestLocalListenNeedsFilesRead(t *testing.T) {
	t.Parallel()
	og := startLocalOAuthGateway(t)
	all, single := scopeTokens(t, og)
	owner := modernBearerClient(t, og.URL, all)
	id := newSandboxID(t, owner)
	write(t, owner, id, "w.txt", "v1", "")
	uri := "sandbox://" + id + "/w.txt"
	filter := mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}}

	exec := modernBearerClient(t, og.URL, single["sandbox:exec"])
	execGot := collect(exec)
	refused := make(chan error, 1)
	stop, err := exec.ListenAsync(t.Context(), filter, func(err error) { refused <- err })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// Either the refusal comes, or the stream's acknowledgement: that it
	// was accepted.
	for refusedErr := error(nil); refusedErr == nil; {
		select {
		case refusedErr = <-refused:
			if !strings.Contains(refusedErr.Error(), "insufficient_scope") {
				t.Errorf("listen with sandbox:exec alone: %v, want 403 insufficient_scope", refusedErr)
			}
		case <-execGot.cond:
			if execGot.has(string(mcp.MethodNotificationSubscriptionsAcknowledged), "") {
				t.Fatal("a subscriptions/listen naming a file was accepted for a token without sandbox:files:read")
			}
		}
	}

	reader := modernBearerClient(t, og.URL, single["sandbox:files:read"])
	got := collect(reader)
	stopReader, err := reader.ListenAsync(t.Context(), filter, func(err error) { t.Errorf("listen with sandbox:files:read: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	defer stopReader()
	got.waitFor(t, mcp.MethodNotificationResourceUpdated, uri, func() {
		shell(t, owner, "echo more >> w.txt", map[string]any{"sandbox_id": id})
	})
	if execGot.has(mcp.MethodNotificationResourceUpdated, uri) {
		t.Error("a token without sandbox:files:read was told of the file's change")
	}
}
