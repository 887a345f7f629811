package resources

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/mcpapi"
	"github.com/sandgate/sandgate/gateway/tools"
	"github.com/sandgate/sandgate/runner/protocol"
)

// toolResourcesRead is the audit records' tool name for resources/read.
const toolResourcesRead = "resources/read"

// readSandboxResource serves resources/read of a sandbox:// URI: a file
// whole (text when it is UTF-8, else a base64 blob) or a directory's
// listing, audited like a read-only tool call.
func (g *Service) readSandboxResource(ctx context.Context, uri string) ([]mcpapi.ResourceContents, error) {
	ref, err := parseSandboxURI(uri)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", mcpapi.ErrResourceNotFound, err)
	}
	p, session, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	b, err := g.resourceBox(ctx, p, session, ref)
	if err != nil {
		return nil, err
	}
	var out []mcpapi.ResourceContents
	err = g.tools.RunReadOnly(ctx, p, session, b, toolResourcesRead, map[string]string{"uri": audit.Clip(uri, 200)}, func(ctx context.Context, rc *protocol.Client) error {
		out, err = g.readContents(ctx, b, rc, uri, ref.runnerPath())
		return runnerNotFound(uri, err)
	})
	return out, err
}

// readContents reads path in b's sandbox as uri's contents: a file from
// this host's disk when it can (see tools.Toolbox.ReadOnHost), else, and always for a
// directory, through rc.
func (g *Service) readContents(ctx context.Context, b *fleet.Box, rc *protocol.Client, uri, path string) ([]mcpapi.ResourceContents, error) {
	if res, ok := g.tools.ReadOnHost(ctx, b, protocol.ReadRequest{Path: path, MaxBytes: maxResourceBytes}); ok {
		return fileContents(uri, path, res.Data), nil
	}
	var fi protocol.FileInfo
	if err := rc.Call(ctx, protocol.OpFileStat, protocol.PathRequest{Path: path}, &fi); err != nil {
		return nil, err
	}
	if fi.Type == protocol.TypeDir {
		var l protocol.ListResult
		if err := rc.Call(ctx, protocol.OpFileList, protocol.ListRequest{Path: path, Hidden: true, MaxEntries: 1000}, &l); err != nil {
			return nil, err
		}
		return []mcpapi.ResourceContents{mcpapi.TextResourceContents{URI: uri, MIMEType: mimeDirectory, Text: tools.ListingText(l)}}, nil
	}
	if fi.Size > maxResourceBytes {
		return nil, fmt.Errorf("%s is %d bytes, above the %d byte limit of resources/read; read it in ranges with the read_file tool (offset/limit)", uri, fi.Size, maxResourceBytes)
	}
	data, err := readBytes(ctx, rc, path)
	if err != nil {
		return nil, err
	}
	return fileContents(uri, path, data), nil
}

// fileContents is a file's bytes as uri's contents: text when they are
// UTF-8 of a text type, else a base64 blob.
func fileContents(uri, path string, data []byte) []mcpapi.ResourceContents {
	mime := mimeOf(path, data)
	if utf8.Valid(data) && !binaryMIME(mime) {
		return []mcpapi.ResourceContents{mcpapi.TextResourceContents{URI: uri, MIMEType: mime, Text: string(data)}}
	}
	return []mcpapi.ResourceContents{mcpapi.BlobResourceContents{URI: uri, MIMEType: mime, Blob: base64.StdEncoding.EncodeToString(data)}}
}

// readBytes reads a whole file of at most maxResourceBytes as bytes.
func readBytes(ctx context.Context, rc *protocol.Client, path string) ([]byte, error) {
	req := protocol.ReadRequest{Path: path, Encoding: protocol.EncodingBase64, MaxBytes: maxResourceBytes}
	var res protocol.ReadResult
	if rc.Payloads() {
		req.Raw = true
		data, err := rc.CallPayload(ctx, protocol.OpFileRead, req, nil, &res)
		if err != nil {
			return nil, err
		}
		if data != nil {
			return data, nil
		}
	} else if err := rc.Call(ctx, protocol.OpFileRead, req, &res); err != nil {
		return nil, err
	}
	if res.Encoding == protocol.EncodingBase64 {
		return base64.StdEncoding.DecodeString(res.Content)
	}
	return []byte(res.Content), nil
}

// readAuditResource serves the caller's own recent audit records.
func (g *Service) readAuditResource(ctx context.Context, uri string) ([]mcpapi.ResourceContents, error) {
	p, _, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	events, err := g.audit.Query(ctx, audit.Query{Issuer: p.Issuer, Subject: p.Subject, Limit: 100})
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	if events == nil {
		events = []audit.Event{}
	}
	b, err := json.MarshalIndent(map[string]any{"records": events}, "", "  ")
	if err != nil {
		return nil, err
	}
	return []mcpapi.ResourceContents{mcpapi.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(b)}}, nil
}
