package interruptsidecar

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"

	"google.golang.org/grpc/codes"
)

// Process is a child started by [Run.StartProcess]: it leads a process group of its own,
// registered with the daemon, which signals the whole group at the trip (Signal, then
// SIGKILL after KillAfter) without the tool doing anything.
type Process struct {
	// Cmd is the started command.
	Cmd *exec.Cmd
	// Terminator is the registered process group.
	Terminator Terminator

	run      *Run
	mu       sync.Mutex
	released bool
}

// StartProcess starts cmd in a new process group led by the child
// (SysProcAttr.Setpgid) and registers that group as a process-group terminator
// (EXTERNALLY_TERMINATED only; checked before anything starts). If the registration is
// refused the group is killed and reaped, and the error returned.
//
//	proc, err := run.StartProcess(exec.Command("make", "test"), interruptsidecar.ProcessGroupOptions{})
//	if err != nil { ... }
//	defer proc.Close()
//	err = proc.Wait()
func (r *Run) StartProcess(cmd *exec.Cmd, opts ProcessGroupOptions) (*Process, error) {
	if err := r.checkKind(ProcessGroupTerminator); err != nil {
		return nil, err
	}
	attr := cmd.SysProcAttr
	if attr == nil {
		attr = &syscall.SysProcAttr{}
		cmd.SysProcAttr = attr
	}
	if attr.Setsid || (attr.Setpgid && attr.Pgid != 0) {
		return nil, &Error{Code: codes.InvalidArgument,
			Message: "StartProcess sets the process group itself: leave SysProcAttr.Setsid and Pgid unset"}
	}
	attr.Setpgid = true
	attr.Pgid = 0
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pgid := cmd.Process.Pid
	terminator, err := r.RegisterProcessGroup(pgid, opts)
	if err != nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, err
	}
	return &Process{Cmd: cmd, Terminator: terminator, run: r}, nil
}

// Pid is the child's process id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Pgid is the child's process group: its pid, since it leads the group.
func (p *Process) Pgid() int { return p.Cmd.Process.Pid }

// Wait waits for the child to exit (exec.Cmd.Wait), then unregisters its group.
func (p *Process) Wait() error {
	err := p.Cmd.Wait()
	return errors.Join(err, p.Release())
}

// Signal sends sig to the child's whole group now (nil when the group is gone).
func (p *Process) Signal(sig syscall.Signal) error {
	if err := syscall.Kill(-p.Pgid(), sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// Release unregisters the group so the daemon no longer signals it. Idempotent; quiet
// when the run has unwound or its stream has ended.
func (p *Process) Release() error {
	p.mu.Lock()
	released := p.released
	p.released = true
	p.mu.Unlock()
	if released {
		return nil
	}
	err := p.run.UnregisterTerminator(p.Terminator.ID)
	if errors.Is(err, ErrFailedPrecondition) || errors.Is(err, ErrUnavailable) {
		return nil
	}
	return err
}

// Close unregisters the group and, if the child has not been waited for, SIGKILLs the
// whole group and reaps the child, so a tool never leaves it behind. Call it after
// Wait, or instead of it; not concurrently with Wait.
func (p *Process) Close() error {
	err := p.Release()
	if p.Cmd.ProcessState == nil {
		// The unreaped leader keeps the pgid from being reused: the group is still ours.
		_ = p.Signal(syscall.SIGKILL)
		_ = p.Cmd.Wait()
	}
	return err
}
