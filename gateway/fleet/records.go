package fleet

import (
	"context"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/egress/policy"
	"github.com/sandgate/sandgate/sandbox"
)

// records is where the fleet keeps what other gateways must know of a
// sandbox and what its labels cannot hold (a changed allowlist, an
// owner's deadline, a pooled sandbox's claim), and where it learns of
// sandboxes it does not track. There are two, chosen once in New:
//
//   - fileRecords (records_files.go): a single gateway keeps them in
//     files under VarDir, read back by the next gateway on the instance
//     after a restart. What it does not track is not its own.
//   - sharedRecords (replicas.go): replicas keep them in the provider's
//     records (sandbox.Recorder), where every replica reads them; a
//     sandbox one replica does not track may be another's.
//
// The fleet's own code never asks which one it has.
type records interface {
	// adoptAll runs at start, on every sandbox the provider lists
	// (listFilter): it adopts what is still its owners' and removes the
	// rest.
	adoptAll(ctx context.Context, infos []sandbox.Info)
	// listFilter is what reconciliation lists.
	listFilter() sandbox.Filter
	// untracked decides, at reconciliation, about a listed sandbox no
	// box tracks, which is not being created nor pooled here: it
	// removes it when it is due.
	untracked(ctx context.Context, info sandbox.Info, now time.Time)
	// listed brings tracked box b up to date with its listing, read at
	// listedAt or later.
	listed(b *Box, info sandbox.Info, listedAt time.Time)
	// unlisted is told of a box tracked before the list that the list
	// did not hold.
	unlisted(b *Box)

	// lookup finds a sandbox the fleet does not track, for the caller
	// whose digest is caller, calling from session.
	lookup(ctx context.Context, caller, session, id string) (*Box, error)
	// findDefault finds p's default for client key that the fleet does
	// not track; nil when there is none.
	findDefault(ctx context.Context, p identity.Identity, key string) (*Box, error)
	// settleDefault runs after the fleet made b (or failed to, err) as
	// p's default for key; it may hand out another one instead.
	settleDefault(ctx context.Context, p identity.Identity, key string, b *Box, err error) (*Box, bool, error)
	// owned lists p's sessionless sandboxes, tracked or not.
	owned(ctx context.Context, p identity.Identity) ([]*Box, error)

	// holds counts what tenant holds against its quota: it may read
	// before the fleet's lock is taken, and the count it returns runs
	// under that lock.
	holds(ctx context.Context, tenant string) (func() int, error)
	// admit checks the quota again once b exists.
	admit(ctx context.Context, b *Box, p identity.Identity) error

	// kept returns the allowlist and deadline recorded for a sandbox
	// being adopted (zero deadline: none).
	kept(info sandbox.Info) (network []string, deadline time.Time)
	// saveDeadline records t as sandbox id's deadline.
	saveDeadline(ctx context.Context, id string, t time.Time) error
	// setAllow makes rules b's allowlist, recorded first; a warning says
	// when other gateways take it up late.
	setAllow(ctx context.Context, b *Box, rules policy.Rules) (warning string, err error)
	// refresh brings b's allowlist up to date from its record, which
	// another gateway may have changed; it forgets b when the record is
	// gone.
	refresh(ctx context.Context, b *Box) error
	// refreshDeadline does the same for b's deadline; a record that
	// cannot be read leaves b as it is.
	refreshDeadline(ctx context.Context, b *Box)
	// removed drops what is recorded of sandbox id, which is gone.
	removed(id string)

	// claim records that pooled sandbox sb is now spec's and returns sb
	// as spec's.
	claim(ctx context.Context, sb sandbox.Sandbox, spec sandbox.Spec) (sandbox.Info, error)
	// pooled prepares the claim record of a new pooled sandbox id.
	pooled(id string) error
	// poolShared reports whether the pool's sandboxes are seen by other
	// gateways (their claims recorded in the provider): they then need
	// a lifetime for their wait in the pool and a record of their use.
	poolShared() bool

	// touch records a use of sandbox id at at, for other gateways to see.
	touch(ctx context.Context, id string, at time.Time) error

	// wire gives a new box the hooks that share its uses.
	wire(b *Box)
	// beforeSweep runs before each idle sweep.
	beforeSweep()
	// spare reports whether b, due for removal for reason, must be kept
	// because another gateway used or extended it.
	spare(ctx context.Context, b *Box, reason string, now time.Time) bool
	// removedDuringCall reports whether a call on b lost its runner
	// because another gateway removed the sandbox meanwhile.
	removedDuringCall(ctx context.Context, b *Box, err error) bool
}

var (
	_ records = fileRecords{}
	_ records = sharedRecords{}
)
