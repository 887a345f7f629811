package gateway_test

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"testing"
)

// TestNotebookFigure runs a notebook with a chart cell in a real container
// of the base image (which has matplotlib): the figure is written back as
// a display_data output carrying a PNG.
func TestNotebookFigure(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)
	nb := notebookJSON(t, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title('squares')\nplt.show()")
	mustOK(t, "write_file", call(t, c, "write_file", map[string]any{"path": "chart.ipynb", "content": nb}))
	r, res, file := runNotebookAt(t, c, "chart.ipynb", nil)
	if res.IsError || r.CellsRun != 1 || r.Cells[0].Figures != 1 {
		t.Fatalf("isError=%v %+v: %s", res.IsError, r, text(res))
	}
	outs := file.Cells[1].Outputs
	if len(outs) != 1 || outs[0]["output_type"] != "display_data" {
		t.Fatalf("outputs: %v", outs)
	}
	data, err := base64.StdEncoding.DecodeString(outs[0]["data"].(map[string]any)["image/png"].(string))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("image/png is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Fatalf("figure is %v", b)
	}
}
