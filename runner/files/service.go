package files

import (
	"path/filepath"
)

// Defaults for the zero fields of Options.
const (
	defaultWorkspace          = "/workspace"
	defaultMaxReadBytes       = 10 << 20
	defaultMaxWriteBytes      = 64 << 20
	defaultMaxListEntries     = 10000
	defaultMaxSearchResults   = 100
	defaultMaxSearchBytes     = 1 << 20
	defaultMaxSearchFileBytes = 10 << 20
	defaultMaxSearchFiles     = 100000

	// hardMaxSearchResults bounds both Options.MaxSearchResults and a
	// request's max_results: more matches than this are never useful to an
	// agent and only fill the websocket.
	hardMaxSearchResults = 10000
	// maxListDepth bounds recursion in List; deeper requests are clamped.
	// Symlinked directories are never followed, but bind mounts can still
	// form cycles, and this bound ends them.
	maxListDepth = 20
)

// Options configures a Service. A zero field takes the default named in
// its comment.
type Options struct {
	// Workspace is the directory relative paths resolve against; default
	// "/workspace". A relative Workspace is made absolute against the
	// runner's working directory.
	Workspace string
	// MaxReadBytes caps the content one read returns; default 10 MiB.
	MaxReadBytes int64
	// MaxWriteBytes caps the size of a written or edited file; default
	// 64 MiB. Edit holds the file in memory, so this also bounds its memory.
	MaxWriteBytes int64
	// MaxListEntries caps the entries one listing returns; default 10000.
	MaxListEntries int
	// MaxSearchResults is the number of matches a search returns when the
	// request does not say; default 100. Neither it nor a request may go
	// above 10000.
	MaxSearchResults int
	// MaxSearchBytes caps the total bytes of matching lines one search
	// returns; default 1 MiB.
	MaxSearchBytes int64
	// MaxSearchFileBytes is the size above which search skips a file;
	// default 10 MiB.
	MaxSearchFileBytes int64
	// MaxSearchFiles stops a search after it has scanned this many files;
	// default 100000.
	MaxSearchFiles int
}

// Service performs file operations for the runner. It holds only its
// configuration, so one Service is safe for concurrent use.
type Service struct {
	opts Options
}

// New returns a Service with opts, zero fields set to their defaults.
func New(opts Options) *Service {
	if opts.Workspace == "" {
		opts.Workspace = defaultWorkspace
	}
	opts.Workspace = absWorkspace(opts.Workspace)
	orDefault(&opts.MaxReadBytes, defaultMaxReadBytes)
	orDefault(&opts.MaxWriteBytes, defaultMaxWriteBytes)
	orDefault(&opts.MaxListEntries, defaultMaxListEntries)
	orDefault(&opts.MaxSearchResults, defaultMaxSearchResults)
	orDefault(&opts.MaxSearchBytes, defaultMaxSearchBytes)
	orDefault(&opts.MaxSearchFileBytes, defaultMaxSearchFileBytes)
	orDefault(&opts.MaxSearchFiles, defaultMaxSearchFiles)
	opts.MaxSearchResults = min(opts.MaxSearchResults, hardMaxSearchResults)
	return &Service{opts: opts}
}

// orDefault sets *v to def when it is zero or negative: a negative cap is
// a configuration mistake, and "no cap" is not a setting this package
// offers.
func orDefault[T int | int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// absWorkspace makes ws absolute and clean, so every resolved path is.
func absWorkspace(ws string) string {
	if filepath.IsAbs(ws) {
		return filepath.Clean(ws)
	}
	if abs, err := filepath.Abs(ws); err == nil {
		return abs
	}
	return filepath.Join("/", ws)
}

// capAt returns req when it is positive and below limit, else limit: a
// request may lower a cap but never raise it.
func capAt[T int | int64](req, limit T) T {
	if req > 0 && req < limit {
		return req
	}
	return limit
}
