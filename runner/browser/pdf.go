package browser

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/runner/protocol"
)

func checkPDF(req protocol.BrowserRequest) error {
	if req.Path == "" {
		return invalidf("path is empty; give where to save the PDF, e.g. page.pdf (relative to /workspace)")
	}
	return nil
}

// runPDF prints the current page to PDF and writes it to req.Path
// atomically, creating parent directories.
func runPDF(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	path := req.Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(s.m.opts.Workspace, path)
	}
	path = filepath.Clean(path)
	pdf, err := chromedp.Call(s.ctx, page.PrintToPDF, page.PrintToPDFParams{PrintBackground: ptr(true), PreferCSSPageSize: ptr(true)})
	if err != nil {
		return protocol.BrowserResult{}, wrapf(err, "print the page to PDF")
	}
	if err := writeAtomic(path, pdf.Data); err != nil {
		return protocol.BrowserResult{}, err
	}
	res := protocol.BrowserResult{Path: path, Bytes: int64(len(pdf.Data))}
	res.URL, res.Title = s.pageInfo()
	res.Message = fmt.Sprintf("saved %s as a %d-byte PDF at %s", res.URL, res.Bytes, path)
	return res, nil
}

// writeAtomic writes data to path through a temporary file in the same
// directory, so a reader never sees half a file.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".sandgate-pdf-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
