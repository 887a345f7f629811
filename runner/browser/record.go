package browser

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

func checkRecord(req protocol.BrowserRequest) error {
	switch req.RecordAction {
	case protocol.RecordStart, protocol.RecordStop:
		return nil
	}
	return invalidf("unknown record action %q; use start or stop", req.RecordAction)
}

// runRecord starts a recording of every tab's requests, or stops it and
// writes it as a HAR file.
func runRecord(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	if req.RecordAction == protocol.RecordStart {
		return s.m.net.startRecording(s.m.recordPath(req.Path))
	}
	rec := s.m.net.stopRecording()
	if rec == nil {
		return protocol.BrowserResult{}, invalidf("no recording is running; start one with browser_record_start")
	}
	data, kept, err := encodeHAR(rec)
	if err != nil {
		return protocol.BrowserResult{}, err
	}
	if err := writeAtomic(rec.path, data); err != nil {
		return protocol.BrowserResult{}, err
	}
	dropped := rec.dropped + len(rec.entries) - kept
	res := protocol.BrowserResult{Path: rec.path, Bytes: int64(len(data)), Entries: kept, Dropped: dropped}
	res.Message = fmt.Sprintf("saved %d request(s) recorded over %s to %s (HAR, %d bytes)", kept, time.Since(rec.began).Round(time.Millisecond), rec.path, len(data))
	if dropped > 0 {
		res.Message += fmt.Sprintf("; %d later request(s) left out at the caps (%d requests, %d MiB)", dropped, protocol.MaxHAREntries, protocol.MaxHARBytes>>20)
	}
	return res, nil
}

// recordPath resolves where a recording goes: relative paths against the
// workspace, and a timestamped name under recordings/ by default.
func (m *Manager) recordPath(path string) string {
	if path == "" {
		path = filepath.Join("recordings", "browser-"+time.Now().UTC().Format("20060102-150405")+".har")
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(m.opts.Workspace, path)
	}
	return filepath.Clean(path)
}

// startRecording begins a recording unless one runs.
func (n *netState) startRecording(path string) (protocol.BrowserResult, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.rec != nil {
		return protocol.BrowserResult{}, invalidf("a recording to %s is already running; stop it with browser_record_stop first", n.rec.path)
	}
	n.rec = newRecorder(path)
	return protocol.BrowserResult{Path: path, Message: fmt.Sprintf("recording every tab's requests; browser_record_stop saves them to %s", path)}, nil
}

// stopRecording ends the recording and returns it, or nil when none ran.
func (n *netState) stopRecording() *recorder {
	n.mu.Lock()
	defer n.mu.Unlock()
	rec := n.rec
	n.rec = nil
	return rec
}

// encodeHAR encodes the recording within MaxHARBytes, leaving out the
// latest entries when it is larger, and returns how many it kept.
func encodeHAR(rec *recorder) ([]byte, int, error) {
	h := rec.har()
	for {
		if rec.dropped > 0 || len(h.Log.Entries) < len(rec.entries) {
			h.Log.Comment = fmt.Sprintf("%d later request(s) left out at sandgate's caps", rec.dropped+len(rec.entries)-len(h.Log.Entries))
		}
		data, err := json.MarshalIndent(h, "", "  ")
		if err != nil {
			return nil, 0, fmt.Errorf("encode the recording: %w", err)
		}
		if len(data) <= protocol.MaxHARBytes || len(h.Log.Entries) == 0 {
			return data, len(h.Log.Entries), nil
		}
		h.Log.Entries = h.Log.Entries[:len(h.Log.Entries)*9/10]
	}
}
