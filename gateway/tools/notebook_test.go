package tools

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/protocol"
)

const sampleNotebook = `{
 "cells": [
  {"cell_type": "markdown", "id": "m1", "metadata": {"tags": ["intro"]}, "source": ["# Title <b>&</b>\n", "text"]},
  {"cell_type": "code", "id": "c1", "execution_count": 7, "metadata": {"collapsed": false, "x-custom": {"n": 1.50}},
   "outputs": [{"output_type": "stream", "name": "stdout", "text": ["old\n"]}], "source": "print('hi')"},
  {"cell_type": "raw", "metadata": {}, "source": "raw text", "attachments": {"a.png": {"image/png": "AAAA"}}}
 ],
 "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}, "custom": [1, 2, 3]},
 "nbformat": 4,
 "nbformat_minor": 5,
 "x-future-field": {"kept": true}
}`

// TestNotebookRoundTrip: a notebook written back without changes keeps
// every field, known or not, and its sources.
func TestNotebookRoundTrip(t *testing.T) {
	nb, err := parseNotebook([]byte(sampleNotebook))
	if err != nil {
		t.Fatal(err)
	}
	if len(nb.cells) != 3 || nb.cells[0].source != "# Title <b>&</b>\ntext" || nb.cells[1].kind != "code" || nb.cells[1].source != "print('hi')" {
		t.Fatalf("cells: %+v", nb.cells)
	}
	out, err := nb.encode()
	if err != nil {
		t.Fatal(err)
	}
	var before, after any
	if err := json.Unmarshal([]byte(sampleNotebook), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &after); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("round trip changed the notebook:\n%s", out)
	}
	if !strings.Contains(string(out), "<b>&</b>") || !strings.HasSuffix(string(out), "}\n") || !strings.Contains(string(out), "1.50") {
		t.Fatalf("want nbformat's writing (no HTML escapes, numbers as written, final newline):\n%s", out)
	}
}

func TestParseNotebookRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not json", `{"cells": [`, "not a notebook"},
		{"array", `[]`, "not a notebook"},
		{"null", `null`, "not a notebook"},
		{"nbformat 3", `{"nbformat": 3, "worksheets": []}`, "nbformat 4"},
		{"no nbformat", `{"cells": []}`, "nbformat nothing"},
		{"r kernel", `{"nbformat": 4, "metadata": {"kernelspec": {"language": "R"}}, "cells": []}`, `"r"`},
		{"julia info", `{"nbformat": 4, "metadata": {"language_info": {"name": "julia"}}, "cells": []}`, "python notebooks only"},
		{"cells not list", `{"nbformat": 4, "cells": {}}`, "not a list"},
		{"cell null", `{"nbformat": 4, "cells": [null]}`, "cell 0 is not an object"},
		{"no cell_type", `{"nbformat": 4, "cells": [{"source": ""}]}`, "cell_type"},
		{"bad source", `{"nbformat": 4, "cells": [{"cell_type": "code", "source": 5}]}`, "cell 0's source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseNotebook([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one with %q", err, tc.want)
			}
		})
	}
}

func TestCellOutputs(t *testing.T) {
	png := append([]byte(nil), pngMagic...)
	tb := "Traceback (most recent call last):\n  File \"<cell 2>\", line 1, in <module>\nmypkg.BadThing: it broke: badly\n"
	for _, tc := range []struct {
		name string
		res  protocol.InterpResult
		want []string // output_type (and stream name) in order
	}{
		{"nothing", protocol.InterpResult{}, nil},
		{"streams and result", protocol.InterpResult{Stdout: "a\nb\n", Stderr: "w", Result: "42", HasResult: true}, []string{"stream:stdout", "stream:stderr", "execute_result"}},
		{"figure then error", protocol.InterpResult{Figures: [][]byte{png, []byte("not png")}, Error: tb, ErrorName: "BadThing"}, []string{"display_data", "error"}},
		{"timeout", protocol.InterpResult{TimedOut: true, Message: "timed out after 1s"}, []string{"error", "stream:stderr"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, o := range cellOutputs(tc.res, 3) {
				k := o.OutputType
				if o.Name != "" {
					k += ":" + o.Name
				}
				got = append(got, k)
				switch o.OutputType {
				case "execute_result":
					if *o.ExecutionCount != 3 || !reflect.DeepEqual(o.Data["text/plain"], []string{"42"}) {
						t.Fatalf("execute_result %+v", o)
					}
				case "error":
					if tc.res.Error != "" && (o.Ename != "BadThing" || *o.Evalue != "it broke: badly" || len(o.Traceback) != 3) {
						t.Fatalf("error %+v", o)
					}
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("outputs %v, want %v", got, tc.want)
			}
		})
	}
	if got := lines("a\n\nb"); !reflect.DeepEqual(got, []string{"a\n", "\n", "b"}) {
		t.Fatalf("lines: %q", got)
	}
}

// FuzzParseNotebook: any input is refused or parsed, and a parsed one
// encodes to JSON that parses to the same cells.
func FuzzParseNotebook(f *testing.F) {
	f.Add([]byte(sampleNotebook))
	f.Add([]byte(`{"nbformat": 4, "cells": [{"cell_type": "code", "source": ["a", "b"]}]}`))
	f.Add([]byte(`{"nbformat": 4.0, "cells": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		nb, err := parseNotebook(data)
		if err != nil {
			return
		}
		out, err := nb.encode()
		if err != nil {
			t.Fatalf("encode a parsed notebook: %v", err)
		}
		again, err := parseNotebook(out)
		if err != nil {
			t.Fatalf("parse the encoded notebook: %v\n%s", err, out)
		}
		if len(again.cells) != len(nb.cells) {
			t.Fatalf("cells %d, then %d", len(nb.cells), len(again.cells))
		}
		for i := range nb.cells {
			if again.cells[i].source != nb.cells[i].source || again.cells[i].kind != nb.cells[i].kind {
				t.Fatalf("cell %d changed: %+v → %+v", i, nb.cells[i], again.cells[i])
			}
		}
	})
}
