package mcpedge

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandgate/sandgate/gateway/mcpapi"
)

// Resources is what the edge serves of the gateway's resources besides
// those registered with AddResource and AddResourceTemplate: the
// caller's own list, completions, and subscriptions.
type Resources interface {
	// List returns one page of the resources the caller may read, from
	// cursor ("" for the first), and the next page's cursor ("" after
	// the last). It replaces mcp-go's static resources/list.
	List(ctx context.Context, cursor string) (page []mcpapi.Resource, next string, err error)
	// Complete answers completion/complete for a resource template's
	// argument.
	Complete(ctx context.Context, req mcpapi.CompleteRequest) (*mcpapi.Completion, error)
	// Subscribe sends key's client, through send, a notification when
	// uri changes and, with listChanged, when the entries of its
	// directory do, after checking the caller may read uri. key is a
	// legacy session's id or a subscriptions/listen stream.
	Subscribe(ctx context.Context, key any, send mcpapi.Notify, uri string, listChanged bool) error
	// WatchWorkspaces sends key's client the list changes of every
	// workspace the caller may list, and reports whether it watches any.
	WatchWorkspaces(ctx context.Context, key any, send mcpapi.Notify) bool
	// Unsubscribe ends key's subscription to uri, or all of key's for "".
	Unsubscribe(key any, uri string)
}

// AddResource serves the resource r, read by read.
func (e *Edge) AddResource(r mcpapi.Resource, read mcpapi.ResourceHandler) {
	e.mcp.AddResource(mcpResource(r), func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return readResource(ctx, req.Params.URI, read)
	})
}

// AddResourceTemplate serves the resources t describes, read by read.
func (e *Edge) AddResourceTemplate(t mcpapi.ResourceTemplate, read mcpapi.ResourceHandler) {
	mt := mcp.NewResourceTemplate(t.URITemplate, t.Name, mcp.WithTemplateTitle(t.Title), mcp.WithTemplateDescription(t.Description))
	e.mcp.AddResourceTemplate(mt, func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return readResource(ctx, req.Params.URI, read)
	})
}

// AddPrompt serves the prompt p, its messages made by get.
func (e *Edge) AddPrompt(p mcpapi.Prompt, get mcpapi.PromptHandler) {
	e.mcp.AddPrompt(mcpPrompt(p), func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		res, err := get(withSession(ctx), req.Params.Arguments)
		if err != nil {
			return nil, err
		}
		msgs := make([]mcp.PromptMessage, len(res.Messages))
		for i, m := range res.Messages {
			msgs[i] = mcp.NewPromptMessage(mcp.Role(m.Role), mcpContent(m.Content))
		}
		return mcp.NewGetPromptResult(res.Description, msgs), nil
	})
}

// withSession adds the request's legacy session, as mcp-go knows it, to
// ctx for the gateway's handlers.
func withSession(ctx context.Context) context.Context {
	return mcpapi.WithSession(ctx, SessionFrom(ctx))
}

// readResource runs read and converts what it returns.
func readResource(ctx context.Context, uri string, read mcpapi.ResourceHandler) ([]mcp.ResourceContents, error) {
	cs, err := read(withSession(ctx), uri)
	if err != nil {
		return nil, markNotFound(ctx, err)
	}
	out := make([]mcp.ResourceContents, len(cs))
	for i, c := range cs {
		out[i] = mcpResourceContents(c)
	}
	return out, nil
}

// mcpResource is r in mcp-go's terms.
func mcpResource(r mcpapi.Resource) mcp.Resource {
	out := mcp.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Size: r.Size}
	if r.LastModified != "" {
		out.Annotations = &mcp.Annotations{LastModified: r.LastModified}
	}
	return out
}

// mcpPrompt is p in mcp-go's terms.
func mcpPrompt(p mcpapi.Prompt) mcp.Prompt {
	opts := []mcp.PromptOption{mcp.WithPromptTitle(p.Title), mcp.WithPromptDescription(p.Description)}
	for _, a := range p.Arguments {
		aopts := []mcp.ArgumentOption{mcp.ArgumentDescription(a.Description)}
		if a.Required {
			aopts = append(aopts, mcp.RequiredArgument())
		}
		opts = append(opts, mcp.WithArgument(a.Name, aopts...))
	}
	return mcp.NewPrompt(p.Name, opts...)
}

// registerResources wires Config.Resources into mcp-go: resources/list,
// completion (through the providers New gives the server), and
// subscriptions of both eras: resources/subscribe and
// resources/unsubscribe of legacy sessions, and the
// resourceSubscriptions and resourcesListChanged of a 2026-07-28
// subscriptions/listen stream.
func (e *Edge) registerResources(hooks *server.Hooks) {
	rs := e.cfg.Resources
	if rs == nil {
		return
	}
	hooks.AddAfterListResources(func(ctx context.Context, _ any, req *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		if res == nil {
			return
		}
		page, next, err := rs.List(withSession(ctx), string(req.Params.Cursor))
		if err != nil {
			return
		}
		res.Resources = make([]mcp.Resource, len(page))
		for i, r := range page {
			res.Resources[i] = mcpResource(r)
		}
		res.NextCursor = mcp.Cursor(next)
	})
	hooks.AddOnRequestInitialization(e.checkSubscribe)
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if s := SessionFrom(ctx); s != "" {
			rs.Unsubscribe(s, req.Params.URI)
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) { rs.Unsubscribe(s.SessionID(), "") })
	hooks.AddBeforeSubscriptionsListen(e.listen)
}

// checkSubscribe runs before mcp-go handles a request. For a legacy
// resources/subscribe it checks that the caller may read the resource
// and starts watching it; mcp-go then answers with an empty result. An
// error answers the request instead, as not-found where it is one.
func (e *Edge) checkSubscribe(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			URI string `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &req) != nil || req.Method != string(mcp.MethodResourcesSubscribe) || req.Params.URI == "" {
		return nil
	}
	session := SessionFrom(ctx)
	if session == "" {
		return nil // a modern request: mcp-go refuses resources/subscribe itself
	}
	send := func(method string, params map[string]any) { e.NotifySession(session, method, params) }
	return markNotFound(ctx, e.cfg.Resources.Subscribe(withSession(ctx), session, send, req.Params.URI, true))
}

// listen subscribes a subscriptions/listen stream to what it asked for,
// for as long as the stream lasts. The middleware refused a stream naming
// a resource the caller's token may not read (403, as for
// resources/subscribe); resources that are not the caller's are left
// out, as mcp-go offers a hook no way to refuse them.
func (e *Edge) listen(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest) {
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil {
		return
	}
	ctx = withSession(ctx)
	send := func(method string, params map[string]any) {
		n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}}}
		select {
		case cs.NotificationChannel() <- n:
		default: // the stream is not keeping up; a later change notifies again
		}
	}
	rs := e.cfg.Resources
	want := req.Params.Notifications
	subscribed := false
	for _, uri := range want.ResourceSubscriptions {
		if err := rs.Subscribe(ctx, cs, send, uri, false); err != nil {
			e.log.Debug("listen: resource left out", "uri", uri, "error", err)
			continue
		}
		subscribed = true
	}
	if want.ResourcesListChanged && rs.WatchWorkspaces(ctx, cs, send) {
		subscribed = true
	}
	if subscribed {
		context.AfterFunc(ctx, func() { rs.Unsubscribe(cs, "") })
	}
}

// resourceCompletions and promptCompletions adapt the gateway's
// completers to mcp-go's providers.
type resourceCompletions struct{ complete mcpapi.Completer }

func (rc resourceCompletions) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return mcpCompletion(rc.complete(withSession(ctx), mcpapi.CompleteRequest{Ref: uri, Argument: arg.Name, Value: arg.Value, Context: cc.Arguments}))
}

type promptCompletions struct{ complete mcpapi.Completer }

func (pc promptCompletions) CompletePromptArgument(ctx context.Context, prompt string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return mcpCompletion(pc.complete(withSession(ctx), mcpapi.CompleteRequest{Ref: prompt, Argument: arg.Name, Value: arg.Value, Context: cc.Arguments}))
}

func mcpCompletion(c *mcpapi.Completion, err error) (*mcp.Completion, error) {
	if err != nil || c == nil {
		return nil, err
	}
	return &mcp.Completion{Values: c.Values, Total: c.Total, HasMore: c.HasMore}, nil
}
