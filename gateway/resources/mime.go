package resources

import (
	"mime"
	"net/http"
	"path/filepath"
	"strings"
)

// mimeDirectory is the MIME type of a directory's listing.
const mimeDirectory = "inode/directory"

// sourceTypes are the MIME types of common source files, which the
// system's table (mime.TypeByExtension) does not know or calls
// application/octet-stream.
var sourceTypes = map[string]string{
	".go": "text/x-go", ".py": "text/x-python", ".rs": "text/x-rust", ".ts": "text/x-typescript",
	".tsx": "text/x-typescript", ".jsx": "text/javascript", ".md": "text/markdown", ".sh": "text/x-shellscript",
	".c": "text/x-c", ".h": "text/x-c", ".cc": "text/x-c++", ".cpp": "text/x-c++", ".java": "text/x-java",
	".rb": "text/x-ruby", ".toml": "application/toml", ".yaml": "application/yaml", ".yml": "application/yaml",
	".mod": "text/plain", ".sum": "text/plain", ".txt": "text/plain", ".log": "text/plain",
	".ipynb": "application/x-ipynb+json", ".json": "application/json",
}

// mimeOf is path's MIME type: by its extension, else sniffed from data.
func mimeOf(path string, data []byte) string {
	ext := strings.ToLower(filepath.Ext(path))
	if t, ok := sourceTypes[ext]; ok {
		return t
	}
	if ext != "" {
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
	}
	return http.DetectContentType(data)
}

// binaryMIME reports whether content of type t goes as a blob even when
// its bytes are valid UTF-8 (an image, an archive).
func binaryMIME(t string) bool {
	t, _, _ = strings.Cut(t, ";")
	switch {
	case strings.HasPrefix(t, "text/"), strings.HasSuffix(t, "+json"), strings.HasSuffix(t, "+xml"):
		return false
	case strings.HasPrefix(t, "image/svg"):
		return false
	case strings.HasPrefix(t, "image/"), strings.HasPrefix(t, "audio/"), strings.HasPrefix(t, "video/"), strings.HasPrefix(t, "font/"):
		return true
	}
	switch t {
	case "application/octet-stream", "application/zip", "application/gzip", "application/x-gzip", "application/pdf", "application/wasm":
		return true
	}
	return false
}
