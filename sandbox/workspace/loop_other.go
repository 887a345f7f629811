//go:build !linux

package workspace

import (
	"context"
	"errors"
	"io/fs"
)

var errNoLoop = errors.New("loop-mounted workspaces need Linux")

func makeImage(context.Context, string, int64, int, int) error { return errNoLoop }
func mountImage(string, string) error                          { return errNoLoop }
func unmount(string) error                                     { return nil }
func isMountPoint(string) (bool, error)                        { return false, nil }
func probe(context.Context, string) error                      { return errNoLoop }
func allocated(fs.FileInfo) int64                              { return 0 }
