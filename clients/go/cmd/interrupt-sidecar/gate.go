package main

import (
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// CMD starts behind a gate (the Python wrapper's spawn.py): it must not do any work before
// its process group is registered with the daemon, or an interrupt arriving in between
// would find nothing to kill. The Python wrapper forks and parks the child before exec; a
// Go process cannot run code between fork and exec, so the parked child is this binary
// re-executed in a hidden mode (gatedChildMode): /proc/self/exe with Setpgid (it leads a
// new group, set before it runs any code) and Pdeathsig (it dies with the wrapper). It
// blocks reading the gate pipe; one byte and it execs CMD, EOF and it exits without ever
// running it. A second pipe, close-on-exec, tells the wrapper whether exec worked: EOF when
// CMD started, else the errno of the failure.
//
// The pipes reach the child by inheritance at their own descriptor numbers (given on its
// command line), not as ExtraFiles: ExtraFiles would take descriptors 3 and 4 over, and CMD
// must inherit the wrapper's descriptors unchanged, as it does under the Python wrapper.

// gatedChildMode is the hidden first argument of the re-executed binary (main.go).
const gatedChildMode = "__run-gated-child"

const (
	gateOpen = 1
	// exitAborted is the gated child's exit status when the gate was closed (CMD never ran).
	exitAborted = 125
)

// gatedChild is the parked child, leader of its own process group.
type gatedChild struct {
	pid    int
	gate   int // the gate's write end; -1 once closed
	status int // the exec-status pipe's read end; -1 once closed
}

// pgid is CMD's process group: the child leads it, so it is the child's pid.
func (c *gatedChild) pgid() int { return c.pid }

// spawnGated starts the gated child for command. Call it from a goroutine locked to its
// thread for good: Pdeathsig fires when the *thread* that forked the child exits.
func spawnGated(command []string) (*gatedChild, error) {
	var gate, status [2]int
	if err := syscall.Pipe2(gate[:], syscall.O_CLOEXEC); err != nil {
		return nil, err
	}
	if err := syscall.Pipe2(status[:], syscall.O_CLOEXEC); err != nil {
		syscall.Close(gate[0])
		syscall.Close(gate[1])
		return nil, err
	}
	// The child's ends are inherited; the wrapper's stay close-on-exec. Nothing else in
	// this process forks, so nothing else inherits them in between.
	clearCloseOnExec(gate[0])
	clearCloseOnExec(status[1])
	argv := append([]string{os.Args[0], gatedChildMode, strconv.Itoa(gate[0]), strconv.Itoa(status[1])}, command...)
	files := make([]uintptr, 3)
	for fd := range files {
		files[fd] = uintptr(fd)
		if _, err := fcntl(fd, syscall.F_GETFD); err != nil {
			files[fd] = ^uintptr(0) // closed in the wrapper: closed in CMD too
		}
	}
	pid, err := syscall.ForkExec("/proc/self/exe", argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: files,
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	syscall.Close(gate[0])
	syscall.Close(status[1])
	if err != nil {
		syscall.Close(gate[1])
		syscall.Close(status[0])
		return nil, err
	}
	return &gatedChild{pid: pid, gate: gate[1], status: status[0]}, nil
}

func fcntl(fd, cmd int) (int, error) {
	r, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

func clearCloseOnExec(fd int) {
	syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFD, 0)
}

// release opens the gate: the child execs CMD. False when the child is already gone
// (killed at the gate: a forwarded signal, or the daemon's kill).
func (c *gatedChild) release() bool {
	if c.gate < 0 {
		return false
	}
	defer c.closeGate()
	for {
		n, err := syscall.Write(c.gate, []byte{gateOpen})
		if err == syscall.EINTR {
			continue
		}
		return err == nil && n == 1
	}
}

// abort closes the gate without opening it: the child exits, CMD never runs.
func (c *gatedChild) abort() {
	c.closeGate()
	if c.status >= 0 {
		syscall.Close(c.status)
		c.status = -1
	}
}

func (c *gatedChild) closeGate() {
	if c.gate >= 0 {
		syscall.Close(c.gate)
		c.gate = -1
	}
}

// execError is, after release, 0 once exec succeeded (or the child died), else its errno.
func (c *gatedChild) execError() syscall.Errno {
	if c.status < 0 {
		return 0
	}
	defer func() {
		syscall.Close(c.status)
		c.status = -1
	}()
	buf := make([]byte, 64)
	var data []byte
	for {
		n, err := syscall.Read(c.status, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n == 0 {
			break
		}
		data = append(data, buf[:n]...)
	}
	if len(data) == 0 {
		return 0
	}
	if code, err := strconv.Atoi(string(data)); err == nil && code > 0 {
		return syscall.Errno(code)
	}
	return syscall.ENOEXEC
}

// runGatedChild is the hidden mode: args are the gate's and the status pipe's descriptors,
// then CMD. It waits at the gate, then becomes CMD; it returns only when it does not.
func runGatedChild(args []string) int {
	// One thread for the signal mask and the exec: the mask is per thread, and the exec'ing
	// thread's is what CMD starts with.
	runtime.LockOSThread()
	if len(args) < 3 {
		return exitAborted
	}
	gate, err1 := strconv.Atoi(args[0])
	status, err2 := strconv.Atoi(args[1])
	if err1 != nil || err2 != nil {
		return exitAborted
	}
	command := args[2:]
	syscall.CloseOnExec(gate)
	syscall.CloseOnExec(status)
	// Defaults from here on, before the gate: a signal the wrapper forwards to the group
	// now kills this child as it would kill CMD (and the wrapper sees it die at the gate).
	resetSignalsForExec()
	clearSignalMask()
	buf := []byte{0}
	for {
		n, err := syscall.Read(gate, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n != 1 || buf[0] != gateOpen {
			return exitAborted
		}
		break
	}
	syscall.Close(gate)
	errno := execvp(command)
	for {
		if _, err := syscall.Write(status, []byte(strconv.Itoa(int(errno)))); err != syscall.EINTR {
			break
		}
	}
	return exitNotFound
}
