package kubernetes

import (
	corev1 "k8s.io/api/core/v1"
)

// podSecurity is the pod-wide security context. AppArmor is left to the
// runtime's default profile, which applies where the node enables it.
func podSecurity(uid, gid int64) *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsUser:    ptr(uid),
		RunAsGroup:   ptr(gid),
		RunAsNonRoot: ptr(true),
		// The volumes (the secret file 0440 among them) belong to the
		// sandbox's group, and no group from the image's /etc/group is
		// added to its processes.
		FSGroup:                  ptr(gid),
		FSGroupChangePolicy:      ptr(corev1.FSGroupChangeOnRootMismatch),
		SupplementalGroups:       nil,
		SupplementalGroupsPolicy: ptr(corev1.SupplementalGroupsPolicyStrict),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		Sysctls:                  nil,
	}
}

// containerSecurity is the security context of both containers: no
// capabilities, no privilege gain through setuid binaries, a read-only
// image. It repeats the user so that the pod's context is not the only
// thing between a container and root.
func containerSecurity(uid, gid int64) *corev1.SecurityContext {
	return &corev1.SecurityContext{
		Privileged:               ptr(false),
		AllowPrivilegeEscalation: ptr(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr(true),
		RunAsNonRoot:             ptr(true),
		RunAsUser:                ptr(uid),
		RunAsGroup:               ptr(gid),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		ProcMount:                ptr(corev1.DefaultProcMount), // /proc masked as usual
	}
}
