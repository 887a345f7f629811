package browser

import (
	"context"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Exported for the black-box tests of pure logic.

type SnapNode = snapNode

var (
	FormatSnapshot = formatSnapshot
	ResolveDevice  = func(device string, width, height int) (View, error) {
		v, err := resolveView(devices["desktop"], device, width, height)
		return View(v), err
	}
	PNGSize  = pngSize
	CheckURL = checkURL
)

// View mirrors view for tests.
type View view

func ParseKey(spec string) ([]*input.DispatchKeyEventParams, error) { return parseKey(spec) }

// CheckRef checks ref against a snapshot of document snapDoc that listed
// refs, used on document doc.
func CheckRef(ref string, listed []string, snapDoc, doc string) error {
	t := refTable{doc: cdp.LoaderID(snapDoc)}
	if listed != nil {
		t.refs = map[string]bool{}
		for _, r := range listed {
			t.refs[r] = true
		}
	}
	return t.check(ref, cdp.LoaderID(doc))
}

func RefsOf(nodes []SnapNode) map[string]bool { return refsOf(nodes, map[string]bool{}) }

// ConsoleLog is a tab's bounded console.
type ConsoleLog struct{ l *consoleLog }

func NewConsoleLog() ConsoleLog                                 { return ConsoleLog{newConsoleLog()} }
func (c ConsoleLog) Add(m protocol.ConsoleMessage)              { c.l.add(m) }
func (c ConsoleLog) Snapshot() ([]protocol.ConsoleMessage, int) { return c.l.snapshot() }
func MaxConsole() (messages, textBytes int)                     { return maxConsole, maxConsoleText }

// Nav follows a tab's navigations.
type Nav struct{ n *navState }

func NewNav() Nav                                               { return Nav{newNavState()} }
func (n Nav) Begin()                                            { n.n.begin() }
func (n Nav) End()                                              { n.n.end() }
func (n Nav) Seq() int                                          { s, _, _ := n.n.state(); return s }
func (n Nav) Settle(ctx context.Context, seq int) (bool, error) { return n.n.settle(ctx, seq) }
