package protocol

// OpHTTPRequest makes one HTTP request from inside the sandbox, through
// its egress proxy like any program there: HTTPRequest → HTTPResult.
const OpHTTPRequest Op = "http.request"

// MaxHTTPBody bounds HTTPRequest.MaxBodyBytes and the request body.
const MaxHTTPBody = 8 << 20

// HTTPRequest is one request. Body is sent as is (text or bytes).
type HTTPRequest struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    []byte            `json:"body,omitempty"`
	// MaxBodyBytes caps the response body kept (default 1 MiB, at most
	// MaxHTTPBody); the rest is read and dropped.
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
	TimeoutMs    int64 `json:"timeout_ms,omitempty"`
	// CAFile is a PEM bundle in the sandbox trusted besides the image's
	// system roots (a private CA).
	CAFile string `json:"ca_file,omitempty"`
	// FollowRedirects follows up to 10 redirects (default: return the
	// redirect itself).
	FollowRedirects bool `json:"follow_redirects,omitempty"`
}

// HTTPResult is the response.
type HTTPResult struct {
	Status     int                 `json:"status"`
	StatusText string              `json:"status_text"`
	Headers    map[string][]string `json:"headers"`
	Body       []byte              `json:"body"`
	BodyBytes  int64               `json:"body_bytes"` // the whole body's size, kept or not
	Truncated  bool                `json:"truncated"`
	FinalURL   string              `json:"final_url"`
	DurationMs int64               `json:"duration_ms"`
}
