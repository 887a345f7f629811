package protocol

import "time"

// OpWatch streams changes to files and directories until the request is
// cancelled: WatchRequest → a stream of EventChange events, each carrying
// a WatchChanges as its Result, ending with an empty result when
// cancelled. Runners without FeatureWatch do not know the operation.
const OpWatch Op = "watch"

// FeatureWatch: the runner serves OpWatch.
const FeatureWatch = "watch"

// EventChange is a non-terminal event of OpWatch: Result holds a
// WatchChanges.
const EventChange EventType = "change"

// MaxWatchPaths bounds the paths one watch request may name; the gateway
// keeps one watch per sandbox, so this is the bound per sandbox.
const MaxWatchPaths = 64

// WatchDebounce is how long a watch waits for the file system to be quiet
// before it reports what changed, and WatchMaxDelay how long it may hold a
// change back while changes keep coming.
const (
	WatchDebounce = 200 * time.Millisecond
	WatchMaxDelay = 2 * time.Second
)

// WatchRequest names the paths to watch: files or directories, absolute or
// relative to the workspace. A directory is watched for its entries (one
// level) and their contents; a file for its content, surviving atomic
// replacement (write to a temporary name, then rename), which is how
// file.write writes. A path that does not exist yet is watched from its
// parent directory and reported when it appears.
type WatchRequest struct {
	Paths []string `json:"paths"`
	// DebounceMs overrides WatchDebounce (0: the default).
	DebounceMs int `json:"debounce_ms,omitempty"`
}

// WatchChange is what happened to one watched path since the last report.
type WatchChange struct {
	Path string `json:"path"` // as the request named it
	// Entries: the directory's list of entries changed (created, removed
	// or renamed entries); for a file, that it appeared or went.
	Entries bool `json:"entries,omitempty"`
	// Content: the file's content or metadata changed, or, for a
	// directory, the content of one of its entries.
	Content bool `json:"content,omitempty"`
}

// WatchChanges is one report of a watch: the watched paths that changed,
// in the order of the request.
type WatchChanges struct {
	Changes []WatchChange `json:"changes"`
}
