package runner

import (
	"context"
	"errors"

	"github.com/sandgate/sandgate/runner/protocol"
)

// closeAfter is a result after which the session closes its connection:
// the answer to protocol.OpCheckpointPrepare, whose caller waits for the
// close to know the runner holds no host socket any more.
type closeAfter struct{}

// checkpointPrepare serves protocol.OpCheckpointPrepare: it suspends the
// Gate, keeping only the connection the request came on.
func checkpointPrepare(g *Gate) handler {
	return func(ctx context.Context, _ protocol.Request, _ func(protocol.Event)) (any, error) {
		own := connOf(ctx)
		if own == nil {
			return nil, errors.New("checkpoint prepare: the request's connection is unknown")
		}
		g.Suspend(own)
		return closeAfter{}, nil
	}
}
