package runner

import (
	"context"
	"encoding/json"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/runner/watch"
)

// watchOp serves protocol.OpWatch: each report is an EventChange whose
// Result is the protocol.WatchChanges; the request ends, with an empty
// result, when the gateway cancels it.
func watchOp(w *watch.Watcher) handler {
	return streaming(func(ctx context.Context, req protocol.WatchRequest, emit func(protocol.Event)) (struct{}, error) {
		err := w.Run(ctx, req, func(c protocol.WatchChanges) {
			b, _ := json.Marshal(c) // plain strings and bools cannot fail
			emit(protocol.Event{Type: protocol.EventChange, Result: b})
		})
		return struct{}{}, err
	})
}
