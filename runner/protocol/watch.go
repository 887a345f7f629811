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
	// Events asks, for each watched directory, for every change of its
	// entries by name and in order (WatchChange.Events), and for one
	// empty report as soon as the watch is set up, so that the caller
	// knows from when changes are seen. Needs FeatureWatchEvents.
	Events bool `json:"events,omitempty"`
	// Recursive watches directories with their subdirectories, those
	// that appear later included (their entries present when they are
	// first seen are reported created), up to MaxWatchDirs. Only with
	// Events; needs FeatureWatchEvents.
	Recursive bool `json:"recursive,omitempty"`
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
	// Events are the changes of a directory's entries in the order they
	// happened, when the request asked for them.
	Events []WatchEvent `json:"events,omitempty"`
	// Lost: some events were not kept (more than MaxWatchEvents, or the
	// kernel's queue overflowed); Events is incomplete.
	Lost bool `json:"lost,omitempty"`
}

// WatchChanges is one report of a watch: the watched paths that changed,
// in the order of the request.
type WatchChanges struct {
	Changes []WatchChange `json:"changes"`
}

// FeatureWatchEvents: the runner's OpWatch honours WatchRequest.Events
// and WatchRequest.Recursive. Runners without it ignore both fields and
// report only WatchChange's flags.
const FeatureWatchEvents = "watch-events"

// Bounds of the event reports: MaxWatchDirs directories per recursive
// request (subdirectories beyond it are not watched), and MaxWatchEvents
// events per path per report (beyond it WatchChange.Lost is set).
const (
	MaxWatchDirs   = 1024
	MaxWatchEvents = 4096
)

// WatchEventOp is what happened to one entry of a watched directory.
type WatchEventOp string

// The operations of WatchEvent, as fsnotify (and so E2B's envd) names
// them: a rename is WatchRename of the old name and WatchCreate of the
// new one.
const (
	WatchCreate WatchEventOp = "create" // created, or moved in
	WatchWrite  WatchEventOp = "write"  // content written
	WatchRemove WatchEventOp = "remove" // removed
	WatchRename WatchEventOp = "rename" // moved away (to another name or out)
	WatchChmod  WatchEventOp = "chmod"  // metadata changed: mode, owner, times
)

// WatchEvent is one change of one entry of a watched directory.
type WatchEvent struct {
	// Name is the entry's path relative to the watched directory,
	// slash-separated ("a.txt", "sub/b.txt" in a recursive watch).
	Name string       `json:"name"`
	Op   WatchEventOp `json:"op"`
	Dir  bool         `json:"dir,omitempty"` // the entry is a directory
}
