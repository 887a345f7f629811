package browser

import (
	"fmt"
	"iter"
	"sync"

	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Console bounds: the newest maxConsole messages of a tab are kept, each
// cut to maxConsoleText bytes.
const (
	maxConsole     = 1000
	maxConsoleText = 4096
)

// consoleLog is the console of one tab since sandgate attached to it.
type consoleLog struct {
	mu      sync.Mutex
	msgs    []protocol.ConsoleMessage
	dropped int
}

func newConsoleLog() *consoleLog { return &consoleLog{} }

func (l *consoleLog) add(m protocol.ConsoleMessage) {
	if len(m.Text) > maxConsoleText {
		m.Text = cutUTF8(m.Text, maxConsoleText) + "…"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.msgs) == maxConsole {
		copy(l.msgs, l.msgs[1:])
		l.msgs = l.msgs[:maxConsole-1]
		l.dropped++
	}
	l.msgs = append(l.msgs, m)
}

// snapshot returns the kept messages and how many older ones were dropped.
func (l *consoleLog) snapshot() ([]protocol.ConsoleMessage, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]protocol.ConsoleMessage(nil), l.msgs...), l.dropped
}

// collect records messages until the tab's context ends.
func (l *consoleLog) collect(messages iter.Seq2[chromedp.ConsoleMessage, error]) {
	for m, err := range messages {
		if err != nil {
			return
		}
		text := m.Text
		if m.Source != "" && m.Source != "console-api" {
			text = m.Source + ": " + text
		}
		if (m.IsException() || m.Type == chromedp.ConsoleError) && m.URL != "" {
			text += fmt.Sprintf(" (%s:%d)", m.URL, m.Line+1)
		}
		l.add(protocol.ConsoleMessage{Level: string(m.Type), Text: text})
	}
}

func runConsole(s *session, _ protocol.BrowserRequest) (protocol.BrowserResult, error) {
	msgs, dropped := s.t.console.snapshot()
	res := protocol.BrowserResult{Console: msgs}
	res.URL, res.Title = s.pageInfo()
	switch {
	case dropped > 0:
		res.Message = fmt.Sprintf("%d messages; %d older ones were dropped (the newest %d are kept)", len(msgs), dropped, maxConsole)
	case len(msgs) == 0:
		res.Message = "no console messages since the tab opened"
	default:
		res.Message = fmt.Sprintf("%d messages", len(msgs))
	}
	return res, nil
}

// cutUTF8 returns at most n bytes of s without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n]
}
