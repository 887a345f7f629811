package files

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadAtMost(t *testing.T) {
	content := strings.Repeat("0123456789", 10) // 100 bytes
	tests := []struct {
		name        string
		size, limit int64 // size is what stat would have said
		want        string
	}{
		{"size known", 100, 1000, content},
		{"size zero, as in /proc", 0, 1000, content},
		{"file grew since stat", 10, 1000, content},
		{"file shrank since stat", 500, 1000, content},
		{"exactly the limit", 100, 100, content},
		{"one past the limit is all it reads", 100, 60, content[:61]},
		{"past the limit with size zero", 0, 60, content[:61]},
	}
	for _, tt := range tests {
		for _, chunked := range []bool{false, true} {
			r := strings.NewReader(content)
			var src io.Reader = r
			if chunked {
				src = iotest.OneByteReader(r)
			}
			got, err := readAtMost(src, tt.size, tt.limit)
			if err != nil || string(got) != tt.want {
				t.Errorf("%s (one byte per read: %v): got %q, %v; want %q", tt.name, chunked, got, err, tt.want)
			}
		}
	}

	broken := errors.New("disk on fire")
	if _, err := readAtMost(iotest.ErrReader(broken), 10, 100); !errors.Is(err, broken) {
		t.Errorf("a failing read: got %v, want %v", err, broken)
	}
}
