package cgroup

// OpenAt opens a cgroup of the given version under a fake tree: root
// stands for /sys/fs/cgroup, selfCgroup for /proc/self/cgroup and
// mountinfo for /proc/self/mountinfo.
func OpenAt(root, selfCgroup, mountinfo string, version int) (*Accounting, error) {
	return open(paths{root: root, selfCgroup: selfCgroup, mountinfo: mountinfo}, version)
}
