package manifest

import (
	"fmt"
	"maps"
	"slices"
)

// claim gives each name to one file. Files with nothing new keep what
// they serve and claim first, so a newcomer never takes a name from a
// tool already loaded; pending versions follow in file name order, and
// one whose name is taken waits (its file keeping its previous version
// where that name is still its own) until the name is free.
func (d *Dir) claim(rep *Report) {
	owner := map[string]string{} // tool name -> file
	for _, file := range sortedKeys(d.files) {
		if st := d.files[file]; st.pending == nil && st.current != nil {
			owner[st.current.Name] = file
		}
	}
	for _, file := range sortedKeys(d.files) {
		st := d.files[file]
		m := st.pending
		if m == nil {
			continue
		}
		other, taken := owner[m.Name]
		if !taken {
			owner[m.Name] = file
			st.current, st.pending, st.problem = m, nil, nil
			continue
		}
		if st.current != nil {
			if _, ok := owner[st.current.Name]; ok {
				st.current = nil
			} else {
				owner[st.current.Name] = file
			}
		}
		d.refuse(rep, st, &FieldError{File: file, Field: "name", Problem: fmt.Sprintf("%q is already declared by %s; tool names must be unique", m.Name, other)})
	}
}

// served maps each served tool name to its manifest.
func (d *Dir) served() map[string]*Manifest {
	out := map[string]*Manifest{}
	for _, st := range d.files {
		if st.current != nil {
			out[st.current.Name] = st.current
		}
	}
	return out
}

// diff returns the manifests in after that are new or changed since
// before, and the names in before no longer in after.
func diff(before, after map[string]*Manifest) (upserted []*Manifest, removed []string) {
	for _, name := range sortedKeys(after) {
		if old, ok := before[name]; !ok || old != after[name] {
			upserted = append(upserted, after[name])
		}
	}
	for _, name := range sortedKeys(before) {
		if _, ok := after[name]; !ok {
			removed = append(removed, name)
		}
	}
	return upserted, removed
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
