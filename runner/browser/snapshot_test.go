package browser_test

import (
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/browser"
)

var todoPage = []browser.SnapNode{
	{Role: "heading", Name: "Todo", Level: 1},
	{Role: "text", Name: "Things to do"},
	{Role: "form", Children: []browser.SnapNode{
		{Role: "textbox", Name: `New "todo"`, Ref: "e1", Placeholder: "What next?", Props: []string{"focused"}},
		{Role: "textbox", Name: "Notes", Ref: "e2", Value: "line one\nline two"},
		{Role: "button", Name: "Add", Ref: "e3", Props: []string{"disabled"}},
	}},
	{Role: "list", Children: []browser.SnapNode{
		{Role: "listitem", Text: "Buy milk", Children: nil},
		{Role: "listitem", Children: []browser.SnapNode{{Role: "checkbox", Name: "Done", Ref: "e4", Props: []string{"checked"}}}},
	}},
	{Role: "link", Name: "About", Ref: "e5", URL: "/about"},
}

func TestFormatSnapshot(t *testing.T) {
	t.Parallel()
	want := `- heading "Todo" [level=1]
- text: Things to do
- form
  - textbox "New \"todo\"" [focused] [placeholder="What next?"] [ref=e1]
  - textbox "Notes" [ref=e2]: "line one\nline two"
  - button "Add" [disabled] [ref=e3]
- list
  - listitem: Buy milk
  - listitem
    - checkbox "Done" [checked] [ref=e4]
- link "About" [ref=e5] -> /about
`
	got, cut := browser.FormatSnapshot(todoPage, 1<<20)
	if got != want || cut != 0 {
		t.Fatalf("FormatSnapshot =\n%s(cut %d)\nwant\n%s", got, cut, want)
	}
	if got, _ := browser.FormatSnapshot(nil, 100); got != "(the page shows nothing)\n" {
		t.Fatalf("empty page: %q", got)
	}
}

// TestFormatSnapshotTruncates: a snapshot over its budget keeps whole
// lines from the top and counts every line left out, children included.
func TestFormatSnapshotTruncates(t *testing.T) {
	t.Parallel()
	full, _ := browser.FormatSnapshot(todoPage, 1<<20)
	lines := strings.SplitAfter(strings.TrimSuffix(full, "\n"), "\n")
	for keep := 0; keep <= len(lines); keep++ {
		budget := len(strings.Join(lines[:keep], ""))
		if keep < len(lines) {
			budget += len(lines[keep]) - 1 // the next line does not fit
		}
		got, cut := browser.FormatSnapshot(todoPage, budget)
		want := strings.Join(lines[:keep], "")
		if keep == 0 {
			want = ""
		}
		if keep < len(lines) && (got != want || cut != len(lines)-keep) {
			t.Fatalf("budget %d: got %q cut %d, want %q cut %d", budget, got, cut, want, len(lines)-keep)
		}
		if len(got) > budget && keep < len(lines) {
			t.Fatalf("budget %d exceeded: %d bytes", budget, len(got))
		}
	}
}

func TestRefs(t *testing.T) {
	t.Parallel()
	refs := browser.RefsOf(todoPage)
	if len(refs) != 5 || !refs["e1"] || !refs["e4"] || !refs["e5"] {
		t.Fatalf("RefsOf = %v", refs)
	}
	listed := []string{"e1", "e4"}
	for _, tc := range []struct {
		ref     string
		listed  []string
		doc     string
		problem string
	}{
		{"e1", listed, "doc1", ""},
		{"e4", listed, "doc1", ""},
		{"button", listed, "doc1", "is not a ref from browser_snapshot"},
		{"E1", listed, "doc1", "is not a ref from browser_snapshot"},
		{"e1", nil, "doc1", "there is no snapshot of this tab yet"},
		{"e2", listed, "doc1", "is not in this tab's latest snapshot"},
		{"e1", listed, "doc2", "is stale: the page has navigated"},
	} {
		err := browser.CheckRef(tc.ref, tc.listed, "doc1", tc.doc)
		switch {
		case tc.problem == "" && err != nil:
			t.Errorf("%s on %s: %v", tc.ref, tc.doc, err)
		case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
			t.Errorf("%s on %s: %v, want %q", tc.ref, tc.doc, err, tc.problem)
		case err != nil && !strings.Contains(err.Error(), "snapshot"):
			t.Errorf("%s: the error does not say to take a snapshot: %v", tc.ref, err)
		}
	}
}
