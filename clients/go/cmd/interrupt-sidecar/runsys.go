package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The operating system's side of `run`, one call each: what Python's os, signal and ctypes
// give the Python wrapper.

// signalNumbers are the names Python's signal.Signals knows on Linux (aliases included):
// --signal accepts exactly these.
var signalNumbers = map[string]syscall.Signal{
	"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGILL": 4, "SIGTRAP": 5, "SIGABRT": 6, "SIGIOT": 6,
	"SIGBUS": 7, "SIGFPE": 8, "SIGKILL": 9, "SIGUSR1": 10, "SIGSEGV": 11, "SIGUSR2": 12,
	"SIGPIPE": 13, "SIGALRM": 14, "SIGTERM": 15, "SIGSTKFLT": 16, "SIGCHLD": 17, "SIGCLD": 17,
	"SIGCONT": 18, "SIGSTOP": 19, "SIGTSTP": 20, "SIGTTIN": 21, "SIGTTOU": 22, "SIGURG": 23,
	"SIGXCPU": 24, "SIGXFSZ": 25, "SIGVTALRM": 26, "SIGPROF": 27, "SIGWINCH": 28, "SIGIO": 29,
	"SIGPOLL": 29, "SIGPWR": 30, "SIGSYS": 31, "SIGRTMIN": 34, "SIGRTMAX": 64,
}

// validSignal is Python's signal.valid_signals() on Linux: 1–31 and 34–64 (glibc keeps 32
// and 33 for itself).
func validSignal(number int) bool {
	return (number >= 1 && number <= 31) || (number >= 34 && number <= 64)
}

// signalName is Python's signal.Signals(n).name ("SIGTERM"), else "signal N".
func signalName(signal syscall.Signal) string {
	aliases := map[string]bool{"SIGIOT": true, "SIGCLD": true, "SIGPOLL": true}
	for name, number := range signalNumbers {
		if number == signal && !aliases[name] {
			return name
		}
	}
	return fmt.Sprintf("signal %d", int(signal))
}

// strerror is the C library's message for errno, as Python's OSError.strerror shows it
// (Go's table has the same words, in lower case).
func strerror(errno syscall.Errno) string {
	text := errno.Error()
	if text == "" {
		return text
	}
	return strings.ToUpper(text[:1]) + text[1:]
}

// errnoOf is the errno inside err (ENOEXEC when there is none: "cannot execute").
func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return syscall.ENOEXEC
}

// execFailureCode is the shell's rule: 127 when CMD does not exist, 126 when it cannot be run.
func execFailureCode(errno syscall.Errno) int {
	if errno == syscall.ENOENT || errno == syscall.ENOTDIR {
		return exitNotFound
	}
	return exitCannotExecute
}

// forwardedSignals are sent on to CMD's group (supervised mode).
var forwardedSignals = []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// resetSignalsForExec gives CMD the dispositions a shell would (direct.py's
// reset_signals_for_exec): SIG_DFL for SIGPIPE, SIGXFSZ and the forwarded signals. The Go
// runtime's handlers would become SIG_DFL at exec anyway, but a signal this process was
// started with ignored (SIGINT or SIGHUP: the runtime keeps those ignored) would stay
// ignored across exec; the Python wrapper resets them, so this does too. A raw
// rt_sigaction: the syscall package has no sigaction, and an all-zero struct sigaction is
// SIG_DFL with no flags and an empty mask whatever the architecture's layout.
func resetSignalsForExec() {
	var dfl [4]uint64
	for _, signal := range append([]syscall.Signal{syscall.SIGPIPE, syscall.SIGXFSZ}, forwardedSignals...) {
		syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(signal), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	}
}

// clearSignalMask unblocks every signal of the calling thread (the mask survives exec).
func clearSignalMask() {
	var empty unix.Sigset_t
	_ = unix.PthreadSigmask(unix.SIG_SETMASK, &empty, nil)
}

// execPath is where execvp looks for CMD: $PATH, else Python's os.defpath.
func execPath() []string {
	path, ok := os.LookupEnv("PATH")
	if !ok {
		path = "/bin:/usr/bin"
	}
	return strings.Split(path, ":")
}

// execvp is Python's os.execvp: CMD as given when it names a path, else each $PATH entry in
// turn; the error raised is the first that is not "no such file" (EACCES, ENOEXEC, ...),
// else the last. Returns only on failure.
func execvp(command []string) syscall.Errno {
	environ := os.Environ()
	if strings.Contains(command[0], "/") {
		return errnoOf(syscall.Exec(command[0], command, environ))
	}
	var saved, last syscall.Errno
	for _, dir := range execPath() {
		candidate := command[0]
		if dir != "" {
			candidate = strings.TrimSuffix(dir, "/") + "/" + command[0]
		}
		last = errnoOf(syscall.Exec(candidate, command, environ))
		if last != syscall.ENOENT && last != syscall.ENOTDIR && saved == 0 {
			saved = last
		}
	}
	if saved != 0 {
		return saved
	}
	return last
}

// execCommand is the no-token mode (direct.py's exec_command): become CMD (same pid, group,
// signals, streams). Returns only on failure: 126 or 127, with the reason on stderr.
func execCommand(command []string) int {
	resetSignalsForExec()
	errno := execvp(command)
	say("cannot run %s: %s", pythonRepr(command[0]), strerror(errno))
	return execFailureCode(errno)
}

// becomeSubreaper makes this process the reaper of its orphaned descendants, so a daemon
// CMD double-forks is re-parented here, not to PID 1, and the sweep can find it.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		// Worded as the Python wrapper's OSError prints.
		errno := errnoOf(err)
		return fmt.Errorf("[Errno %d] prctl(%d, 1): %s", int(errno), unix.PR_SET_CHILD_SUBREAPER, strerror(errno))
	}
	return nil
}

// handTerminal makes pgid the terminal's foreground group when this process holds it (as a
// shell does for a job), and returns how to take it back; nil without a terminal (the usual
// case: an agent's pipes) or when the wrapper itself runs in the background.
//
// In a group of its own CMD would otherwise be a background job: its first read of the
// terminal would stop it (SIGTTIN) for good.
func handTerminal(pgid int) func() {
	if _, err := unix.IoctlGetTermios(0, unix.TCGETS); err != nil {
		return nil
	}
	foreground, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	if err != nil || foreground != syscall.Getpgrp() {
		return nil
	}
	if err := unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, pgid); err != nil {
		return nil
	}
	return func() {
		// The wrapper is a background group now: unless SIGTTOU is ignored, TIOCSPGRP
		// would stop it.
		var ignore, previous [4]uint64
		ignore[0] = 1 // SIG_IGN
		syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGTTOU), uintptr(unsafe.Pointer(&ignore)),
			uintptr(unsafe.Pointer(&previous)), 8, 0, 0)
		_ = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, syscall.Getpgrp())
		syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGTTOU), uintptr(unsafe.Pointer(&previous)), 0, 8, 0, 0)
	}
}
