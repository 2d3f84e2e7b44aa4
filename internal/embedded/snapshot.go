package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/embedded/dedupeindex"
)

// Reading while another process has the file: the process that has the file open (a run, holding bbolt's file lock)
// serves snapshots of its last commit on a Unix socket next to the file,
// SocketPath: for each connection it opens a read transaction, which sees
// the last committed state whatever the writer does meanwhile, and writes
// it out with Tx.WriteTo (bbolt's consistent copy), preceded by its size.
// OpenSnapshot, in a read-only command of another process, receives it
// into a private temporary file and opens that read-only. Nobody asking
// costs the writer nothing (an idle listener); a snapshot costs it one
// read transaction for the time of the copy (the pages it pins are not
// reused meanwhile: the file may grow a little) and the disk and socket
// bandwidth of the copy, as long as the file.

// ErrNoSnapshot means no process serves snapshots of the file: none has
// it open, or one from before snapshots, or its socket path is too long.
var ErrNoSnapshot = errors.New("no snapshot served")

// maxSocketPath is the longest socket path used: sun_path holds 108 bytes
// on Linux and 104 on macOS, the terminating NUL included.
const maxSocketPath = 100

// snapshotTimeout bounds one snapshot's copy on both sides: a reader that
// stops reading cannot keep the writer's read transaction open (which
// would hold up its Close).
const snapshotTimeout = 2 * time.Minute

// SocketPath returns the path of the snapshot socket of the store file at
// path (absolute), or "" when it would be too long for a socket.
func SocketPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	p := abs + ".sock"
	if len(p) > maxSocketPath {
		return ""
	}
	return p
}

// serveSnapshots starts serving snapshots of s, best effort: a socket
// that cannot be made only means readers get ErrLocked, as before.
func (s *Store) serveSnapshots() {
	sock := SocketPath(s.path)
	if sock == "" {
		return
	}
	// A socket left by a process that died: this one holds the file lock,
	// so no other process serves the file.
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return
	}
	// The folder is the store's (0750): the socket is the owner's.
	_ = os.Chmod(sock, 0o600)
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	s.listener = ln
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.serving.Add(1)
			go func() {
				defer s.serving.Done()
				s.sendSnapshot(conn)
			}()
		}
	}()
}

// sendSnapshot writes the last committed state of the file to conn: its
// size (8 bytes, big endian), then the bytes.
func (s *Store) sendSnapshot(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(snapshotTimeout))
	_ = s.db.View(func(tx *bolt.Tx) error {
		var size [8]byte
		binary.BigEndian.PutUint64(size[:], uint64(tx.Size()))
		if _, err := conn.Write(size[:]); err != nil {
			return err
		}
		_, err := tx.WriteTo(conn)
		return err
	})
}

// stopServing closes the socket and waits for the snapshots in progress.
func (s *Store) stopServing() {
	if s.listener != nil {
		_ = s.listener.Close()
	}
	s.serving.Wait()
}

// OpenSnapshot opens, read-only, a snapshot of the store file at path
// taken by the process that has it open: its last commit. The snapshot is
// a private temporary copy, removed by Close; every write to it fails. It
// returns an error matching ErrNoSnapshot when no process serves one.
func OpenSnapshot(ctx context.Context, path string) (*Store, error) {
	sock := SocketPath(path)
	if sock == "" {
		return nil, fmt.Errorf("snapshot of %s: %w (the path is too long for a socket)", path, ErrNoSnapshot)
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w (%v)", path, ErrNoSnapshot, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(snapshotTimeout))
	dir, err := os.MkdirTemp("", "reportjob-snapshot-")
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", path, err)
	}
	s, err := receiveSnapshot(conn, path, filepath.Join(dir, "snapshot.db"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.removeOnClose = dir
	return s, nil
}

// receiveSnapshot copies a snapshot from conn into file and opens it.
func receiveSnapshot(conn net.Conn, path, file string) (*Store, error) {
	var size [8]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w (%v)", path, ErrNoSnapshot, err)
	}
	want := int64(binary.BigEndian.Uint64(size[:]))
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", path, err)
	}
	n, err := io.Copy(f, conn)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != want {
		err = fmt.Errorf("received %d of %d bytes", n, want)
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", path, err)
	}
	db, err := bolt.Open(file, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", path, err)
	}
	s := &Store{Index: dedupeindex.New(db, path), db: db, path: path, opts: Options{}.withDefaults(), session: newSession(), snapshot: true}
	if err := s.checkFormat(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// Snapshot reports whether s is a read-only snapshot (OpenSnapshot).
func (s *Store) Snapshot() bool { return s.snapshot }
