package interruptsidecar

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	pb "github.com/interrupt-sidecar/interrupt-sidecar/clients/go/gen/interrupt/v1"
)

// doorbellMaxFrame bounds a doorbell frame's length: a Cancel is a few dozen bytes (its
// detail at most 1 KiB), so a longer length is garbage, not something to allocate for.
const doorbellMaxFrame = 64 << 10

// doorbellReadSize is the first read's buffer: enough for any real frame, so the length
// and the Cancel arrive in one read (one wake-up) rather than two.
const doorbellReadSize = 2048

// doorbell is the tool's end of the cancel doorbell: a unix socket on which the daemon
// writes this tool's cancel ahead of the same cancel on the Attach stream.
//
// One goroutine connects to the path the daemon granted, writes the one-time token and
// reads one frame (a 4-byte big-endian length, then a serialized Cancel), which it hands
// to onCancel, the stream's own cancel path: the run trips on whichever comes first and
// ignores the other. The stream stays authoritative, so anything going wrong here (no
// socket, a hang-up before a whole frame, a malformed frame) is logged at debug and the
// stream's cancel is used.
type doorbell struct {
	path     string
	token    string
	onCancel func(*pb.Cancel)
	log      *slog.Logger

	stopDial context.CancelFunc
	done     chan struct{} // closed when the goroutine has returned (its socket closed)
	rang     atomic.Bool   // a whole, valid frame was read and handed on

	mu      sync.Mutex
	conn    net.Conn // nil until connected, and again once closed
	stopped bool
}

// openDoorbell starts connecting to the granted doorbell in a goroutine of its own: it
// never blocks the caller (the stream's start). onCancel is called at most once, from
// that goroutine, and must not block.
func openDoorbell(grant *pb.Doorbell, onCancel func(*pb.Cancel), logger *slog.Logger) *doorbell {
	ctx, stopDial := context.WithCancel(context.Background())
	d := &doorbell{
		path:     grant.GetPath(),
		token:    grant.GetToken(),
		onCancel: onCancel,
		log:      logger,
		stopDial: stopDial,
		done:     make(chan struct{}),
	}
	go d.listen(ctx)
	return d
}

func (d *doorbell) listen(ctx context.Context) {
	defer close(d.done)
	// Nothing but the one frame is ever written: hang up once it is read, or on any failure.
	defer d.stop()
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "unix", d.path)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Debug("interrupt-sidecar: no cancel doorbell; the stream's cancel will do", "path", d.path, "error", err)
		}
		return
	}
	d.mu.Lock()
	if d.stopped { // stopped while connecting
		d.mu.Unlock()
		_ = conn.Close()
		return
	}
	d.conn = conn
	d.mu.Unlock()
	cancel, err := d.read(conn)
	if err != nil {
		if !d.isStopped() {
			d.log.Debug("interrupt-sidecar: the cancel doorbell ended without a cancel; the stream's will do",
				"path", d.path, "error", err)
		}
		return
	}
	d.rang.Store(true)
	d.onCancel(cancel)
}

// read writes the token and reads the one frame.
func (d *doorbell) read(conn net.Conn) (*pb.Cancel, error) {
	if _, err := io.WriteString(conn, d.token); err != nil {
		return nil, err
	}
	buf := make([]byte, doorbellReadSize)
	n, err := io.ReadAtLeast(conn, buf, 4)
	if err != nil {
		// io.EOF or io.ErrUnexpectedEOF: the stream ended, the token was refused, or
		// the daemon is stopping; the stream says which.
		return nil, fmt.Errorf("hung up before a whole frame: %w", err)
	}
	length := int(binary.BigEndian.Uint32(buf))
	if length > doorbellMaxFrame {
		return nil, fmt.Errorf("a %d-byte frame", length)
	}
	if end := 4 + length; end > n {
		if end > len(buf) {
			buf = append(buf[:n], make([]byte, end-n)...)
		}
		if _, err := io.ReadFull(conn, buf[n:end]); err != nil {
			return nil, fmt.Errorf("hung up before a whole frame: %w", err)
		}
	}
	cancel := &pb.Cancel{}
	if err := proto.Unmarshal(buf[4:4+length], cancel); err != nil {
		return nil, fmt.Errorf("a malformed cancel: %w", err)
	}
	return cancel, nil
}

func (d *doorbell) isStopped() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stopped
}

// stop hangs up, or stops connecting, without waiting. Idempotent; called when the
// stream ends (the daemon rings no more) and by close.
func (d *doorbell) stop() {
	d.stopDial()
	d.mu.Lock()
	d.stopped = true
	conn := d.conn
	d.conn = nil
	d.mu.Unlock()
	if conn != nil {
		// Unblocks the goroutine's read or write (net.ErrClosed).
		if err := conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			d.log.Debug("interrupt-sidecar: closing the cancel doorbell", "error", err)
		}
	}
}

// close stops the doorbell and waits for its goroutine, so neither it nor its socket
// outlives the run.
func (d *doorbell) close() {
	d.stop()
	<-d.done
}
