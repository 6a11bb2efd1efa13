//go:build unix

package local

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// groupAttr puts the trainer in a process group of its own, so that it is
// signalled as a whole and not with distill's (a Ctrl-C in the terminal).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// identify returns what tells process pid from a later one with the same
// id: its start time and the boot id, from /proc where there is one.
func identify(pid int) (ticks, boot string) {
	if st, err := readStat(pid); err == nil {
		ticks = st.start
	}
	return ticks, bootID()
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// alive reports whether the trainer's process group still has a process.
func (p proc) alive() (bool, error) {
	if p.boot != "" {
		if now := bootID(); now != "" && now != p.boot {
			return false, nil // the machine restarted
		}
	}
	err := syscall.Kill(-p.pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return false, nil
	}
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false, err
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return true, nil // no /proc: trust kill
	}
	// A group with this id exists. It is another one if its leader is a
	// later process with the same id (a group id cannot be reused while
	// the group has a process, so a group without its leader is ours).
	if leader, err := readStat(p.pid); err == nil && p.ticks != "" && leader.start != p.ticks {
		return false, nil
	}
	return liveMember(p.pid)
}

// liveMember reports whether a process of group pgid is not a zombie.
func liveMember(pgid int) (bool, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue // gone meanwhile
		}
		if st.pgrp == pgid && st.state != "Z" && st.state != "X" {
			return true, nil
		}
	}
	return false, nil
}

// signal sends sig to the trainer's process group, if it is still there.
func (p proc) signal(sig syscall.Signal) error {
	alive, err := p.alive()
	if err != nil || !alive {
		return err
	}
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// stat is what alive needs of /proc/PID/stat.
type stat struct {
	state string
	pgrp  int
	start string // clock ticks after boot
}

func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	// "pid (comm) state ppid pgrp ...": comm may hold anything, so the
	// fields start after the last ')'. starttime is the 22nd field.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return stat{}, errors.New("malformed /proc stat")
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return stat{}, err
	}
	return stat{state: f[0], pgrp: pgrp, start: f[19]}, nil
}
