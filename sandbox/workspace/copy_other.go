//go:build !linux

package workspace

import "context"

func frozen(string, func() error) error               { return errNoLoop }
func copyImage(context.Context, string, string) error { return errNoLoop }
func syncDir(string) error                            { return errNoLoop }
