package cgroup

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// paths names the files the package reads to find the runner's cgroup.
// Tests point them at a fake tree.
type paths struct {
	root       string // cgroup mount root, /sys/fs/cgroup
	selfCgroup string // /proc/self/cgroup
	mountinfo  string // /proc/self/mountinfo
}

func defaultPaths() paths {
	return paths{
		root:       "/sys/fs/cgroup",
		selfCgroup: "/proc/self/cgroup",
		mountinfo:  "/proc/self/mountinfo",
	}
}

// mountRoots returns, for every cgroup mount, the group that the mount
// shows as its root: for v1 keyed by controller name ("memory", "pids"),
// for v2 keyed by "". Inside a container without a cgroup namespace that
// root is the container's own group (e.g. /docker/<id>), while
// /proc/self/cgroup still names the full path.
func mountRoots(mountinfo string) map[string]string {
	roots := map[string]string{}
	f, err := os.Open(mountinfo)
	if err != nil {
		return roots
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		pre, post, ok := strings.Cut(s.Text(), " - ")
		if !ok {
			continue
		}
		fields, super := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(super) < 3 {
			continue
		}
		switch super[0] {
		case "cgroup2":
			roots[""] = fields[3]
		case "cgroup":
			for _, opt := range strings.Split(super[2], ",") {
				if _, seen := roots[opt]; !seen {
					roots[opt] = fields[3]
				}
			}
		}
	}
	return roots
}

// resolveGroup returns the group, relative to the hierarchy mounted at
// dir, that holds the runner. own is the path /proc/self/cgroup names and
// mountRoot the group shown at dir. The candidates in order:
//
//   - own made relative to mountRoot: a container whose mount shows only
//     its own group (cgroup namespace "host" on v1);
//   - own itself: a host, or a namespace whose mount shows the whole tree;
//   - "/": a private cgroup namespace, where the runner's group is the
//     mount's root whatever /proc/self/cgroup says.
//
// The first candidate that exists as a directory wins.
func resolveGroup(dir, own, mountRoot string) string {
	var cands []string
	if own != "" {
		if mountRoot != "" && mountRoot != "/" {
			if rel, ok := strings.CutPrefix(own, mountRoot); ok && (rel == "" || rel[0] == '/') {
				cands = append(cands, "/"+strings.TrimPrefix(rel, "/"))
			}
		}
		cands = append(cands, own)
	}
	cands = append(cands, "/")
	for _, c := range cands {
		c = filepath.Clean("/" + c)
		if fi, err := os.Stat(filepath.Join(dir, c)); err == nil && fi.IsDir() {
			return c
		}
	}
	return ""
}
