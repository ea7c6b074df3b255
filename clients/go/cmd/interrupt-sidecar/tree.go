package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The descendant sweep after CMD exits (the Python wrapper's tree.py): the wrapper is a
// child subreaper, so every process CMD started, including one that double-forked and
// called setsid() to leave the group, still has the wrapper in its parent chain in /proc.
// Whatever is left gets SIGTERM (and SIGCONT), then SIGKILL after the grace, round after
// round until /proc shows none.
//
// PID reuse: a descendant found in one scan may exit and its PID be recycled before it is
// signalled, so each is signalled through a pidfd opened before its start time is checked
// again: the pidfd then provably names the process that was scanned.

// giveUpAfterKill is how long survivors of SIGKILL are waited for before the wrapper says so
// and exits.
const giveUpAfterKill = 5 * time.Second

// procStat is one process as /proc showed it.
type procStat struct {
	pid, ppid int
	zombie    bool
	start     uint64 // field 22, clock ticks since boot: never repeats for a recycled PID
}

func readStat(pid int) (procStat, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// comm (field 2) may contain spaces and parentheses: split after the last ')'.
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 || end+2 > len(raw) {
		return procStat{}, false
	}
	fields := bytes.Fields(raw[end+2:])
	if len(fields) < 20 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(fields[1]))
	start, err2 := strconv.ParseUint(string(fields[19]), 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	state := string(fields[0])
	return procStat{pid: pid, ppid: ppid, zombie: state == "Z" || state == "X", start: start}, true
}

// liveDescendants are the live processes below root in /proc's parent chain.
func liveDescendants(root int) []procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]procStat{}
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		if stat, ok := readStat(pid); ok {
			children[stat.ppid] = append(children[stat.ppid], stat)
		}
	}
	var found []procStat
	seen := map[int]bool{root: true}
	frontier := []int{root}
	for len(frontier) > 0 {
		parent := frontier[len(frontier)-1]
		frontier = frontier[:len(frontier)-1]
		for _, child := range children[parent] {
			if !seen[child.pid] {
				seen[child.pid] = true
				frontier = append(frontier, child.pid)
				if !child.zombie {
					found = append(found, child)
				}
			}
		}
	}
	return found
}

// signalProcess sends signal to the process (pid, start) only; false when it is gone.
func signalProcess(pid int, start uint64, signal syscall.Signal) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err == syscall.ENOSYS {
		// No pidfds (Linux < 5.3): re-checked by start time immediately before kill.
		now, ok := readStat(pid)
		if !ok || now.start != start || now.zombie {
			return false
		}
		return syscall.Kill(pid, signal) == nil
	}
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	// Checked after opening: the pidfd pins one process, so a match proves it is the one.
	if now, ok := readStat(pid); !ok || now.start != start {
		return false
	}
	return unix.PidfdSendSignal(fd, signal, nil, 0) == nil
}

// killDescendants terminates every live descendant of root, and SIGKILLs those still alive
// after grace; reap collects exited children (CMD's orphans are re-parented to the wrapper).
// Repeats until /proc shows none, so children forked during the sweep are caught too.
func killDescendants(root int, grace time.Duration, reap func()) {
	type key struct {
		pid   int
		start uint64
	}
	killAt := time.Now().Add(grace)
	signalled := map[key]bool{}
	killed := map[key]bool{}
	delay := time.Millisecond
	for {
		reap()
		alive := liveDescendants(root)
		if len(alive) == 0 {
			return
		}
		now := time.Now()
		if now.After(killAt.Add(giveUpAfterKill)) {
			pids := ""
			for i, process := range alive {
				if i > 0 {
					pids += ", "
				}
				pids += strconv.Itoa(process.pid)
			}
			fmt.Fprintf(os.Stderr, "descendants survived SIGKILL: %s\n", pids)
			return
		}
		for _, process := range alive {
			k := key{process.pid, process.start}
			if !now.Before(killAt) {
				if !killed[k] && signalProcess(process.pid, process.start, syscall.SIGKILL) {
					killed[k] = true
				}
			} else if !signalled[k] && signalProcess(process.pid, process.start, syscall.SIGTERM) {
				signalled[k] = true
				// A stopped process cannot act on SIGTERM until it is continued.
				signalProcess(process.pid, process.start, syscall.SIGCONT)
			}
		}
		time.Sleep(delay)
		delay = min(delay*2, 20*time.Millisecond)
	}
}
