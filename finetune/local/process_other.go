//go:build !unix

package local

import (
	"errors"
	"syscall"
)

var errUnsupported = errors.New("the local fine-tuning backend needs a Unix system")

func groupAttr() *syscall.SysProcAttr { return nil }

func identify(int) (ticks, boot string) { return "", "" }

func (p proc) alive() (bool, error) { return false, errUnsupported }

func (p proc) signal(syscall.Signal) error { return errUnsupported }
