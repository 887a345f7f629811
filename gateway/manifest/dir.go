package manifest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// MaxFiles bounds the manifests one directory may hold; files past it (in
// name order) are refused.
const MaxFiles = 256

// Dir is a directory of manifests and what was last loaded from it. It is
// not safe for concurrent use: one goroutine reloads it.
type Dir struct {
	path  string
	opts  Options
	files map[string]*fileState // by base name
}

// fileState is one manifest file as last seen.
type fileState struct {
	stamp   stamp     // how the file looked when last read
	current *Manifest // the version being served; nil: none
	// pending is the file's content, good but not served because its
	// name is taken; it is tried again at every reload.
	pending *Manifest
	problem error // why the file as last read is not served; nil: it is
}

// stamp tells whether a file may have changed since it was last read
// without reading it: the directory is polled, and most polls find
// nothing new.
type stamp struct {
	size  int64
	mtime time.Time
}

// Report is what one reload changed.
type Report struct {
	// Loaded is every manifest now served, by file name.
	Loaded []*Manifest
	// Upserted are manifests new or changed by this reload; Removed are
	// names no longer served.
	Upserted []*Manifest
	Removed  []string
	// Problems are this reload's new problems, one per file, each saying
	// whether an earlier version of the file stays loaded. A file whose
	// problem is unchanged since the last reload is not reported again.
	Problems []error
	// Invalid counts the files not served as they are now written.
	Invalid int
}

// Changed reports whether the set of served tools changed.
func (r Report) Changed() bool { return len(r.Upserted) > 0 || len(r.Removed) > 0 }

// NewDir returns a Dir for path; nothing is loaded until Reload.
func NewDir(path string, opts Options) *Dir {
	return &Dir{path: path, opts: opts, files: map[string]*fileState{}}
}

// Reload reads the directory again. It fails only when the directory
// itself cannot be read, and then changes nothing.
func (d *Dir) Reload() (Report, error) {
	names, err := d.list()
	if err != nil {
		return Report{}, err
	}
	before := d.served()
	var rep Report
	seen := map[string]bool{}
	for i, name := range names {
		seen[name] = true
		st := d.files[name]
		if st == nil {
			st = &fileState{}
			d.files[name] = st
		}
		if i >= MaxFiles {
			st.current, st.pending, st.stamp = nil, nil, stamp{}
			d.refuse(&rep, st, &FieldError{File: name, Problem: fmt.Sprintf("more than %d manifest files in the directory; this one is past the limit", MaxFiles)})
			continue
		}
		m, s, err := d.read(name, st)
		st.stamp = s
		switch {
		case err != nil:
			st.pending = nil
			d.refuse(&rep, st, err)
		case m != nil:
			st.pending = m
		}
	}
	for name := range d.files {
		if !seen[name] {
			delete(d.files, name)
		}
	}
	d.claim(&rep)
	after := d.served()
	rep.Upserted, rep.Removed = diff(before, after)
	for _, name := range sortedKeys(d.files) {
		if st := d.files[name]; st.current != nil {
			rep.Loaded = append(rep.Loaded, st.current)
		}
		if d.files[name].problem != nil {
			rep.Invalid++
		}
	}
	return rep, nil
}

// list returns the directory's manifest files by name: *.json, not
// hidden (editors' temporary files, Kubernetes' ..data links).
func (d *Dir) list() ([]string, error) {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, fmt.Errorf("read tools directory: %w", err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") || e.IsDir() {
			continue
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// read parses a file whose stamp changed. It returns a nil manifest and
// nil error when the file is as last read, or changed only in its stamp.
func (d *Dir) read(name string, st *fileState) (*Manifest, stamp, error) {
	f, err := os.Open(filepath.Join(d.path, name))
	if err != nil {
		return nil, stamp{}, &FieldError{File: name, Problem: "cannot be read: " + err.Error()}
	}
	defer f.Close()
	fi, err := f.Stat() // follows symlinks, as Kubernetes ConfigMaps need
	if err != nil || !fi.Mode().IsRegular() {
		return nil, stamp{}, &FieldError{File: name, Problem: "not a regular file"}
	}
	s := stamp{size: fi.Size(), mtime: fi.ModTime()}
	if s == st.stamp {
		return nil, s, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, s, &FieldError{File: name, Problem: "cannot be read: " + err.Error()}
	}
	m, err := Parse(name, data, d.opts)
	if err != nil {
		return nil, s, err
	}
	if st.current != nil && st.current.Sum == m.Sum {
		st.pending, st.problem = nil, nil // touched, or changed back
		return nil, s, nil
	}
	return m, s, nil
}

// refuse records that a file's content is not served; its previous
// version, if any, stays. A problem is reported once, not at every
// reload that finds it still there.
func (d *Dir) refuse(rep *Report, st *fileState, err error) {
	err = withOutcome(err, st.current)
	if st.problem != nil && st.problem.Error() == err.Error() {
		return
	}
	st.problem = err
	rep.Problems = append(rep.Problems, err)
}

func withOutcome(err error, kept *Manifest) error {
	if kept != nil {
		return fmt.Errorf("%w (the previous version of tool %s stays loaded)", err, kept.Name)
	}
	return fmt.Errorf("%w (not loaded)", err)
}
