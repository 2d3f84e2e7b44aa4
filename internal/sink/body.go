package sink

import (
	"errors"
	"fmt"
	"io"
)

// exactly returns a view of the size bytes of r from its current offset,
// as an io.ReadSeeker whose offset 0 is r's current offset (a driver that
// retries seeks to 0), or an error if r does not hold exactly size more
// bytes. When r is an io.ReaderAt too (a file, a bytes.Reader), so is the
// view, so that a driver can read parts of it concurrently.
func exactly(r io.ReadSeeker, size int64) (io.ReadSeeker, error) {
	start, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	end, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	if _, err := r.Seek(start, io.SeekStart); err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	if end-start != size {
		return nil, fmt.Errorf("body holds %d bytes, size says %d", end-start, size)
	}
	if ra, ok := r.(io.ReaderAt); ok {
		return io.NewSectionReader(ra, start, size), nil
	}
	return &section{r: r, base: start, size: size}, nil
}

// section is size bytes of r from base, read sequentially; it seeks r
// only when its own offset moves elsewhere.
type section struct {
	r    io.ReadSeeker
	base int64 // r's offset of the section's first byte
	size int64
	off  int64 // next byte to read, from base
	pos  int64 // r's offset from base; -1 = unknown
}

func (s *section) Read(p []byte) (int, error) {
	if s.off >= s.size {
		return 0, io.EOF
	}
	if s.pos != s.off {
		if _, err := s.r.Seek(s.base+s.off, io.SeekStart); err != nil {
			s.pos = -1
			return 0, err
		}
		s.pos = s.off
	}
	if rest := s.size - s.off; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := s.r.Read(p)
	s.off += int64(n)
	s.pos = s.off
	if errors.Is(err, io.EOF) {
		if s.off < s.size {
			return n, io.ErrUnexpectedEOF
		}
		err = nil
	}
	return n, err
}

var errWhence = errors.New("seek: invalid whence")

func (s *section) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += s.off
	case io.SeekEnd:
		offset += s.size
	default:
		return 0, errWhence
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek: negative offset %d", offset)
	}
	s.off = offset
	return offset, nil
}

// sizedReader reads an object and fails if it ends before want bytes or
// goes on beyond them.
type sizedReader struct {
	r    io.ReadCloser
	url  string
	want int64
	n    int64
}

func (s *sizedReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.n += int64(n)
	switch {
	case s.n > s.want:
		return n, fmt.Errorf("read %s: more than the object's %d bytes", s.url, s.want)
	case errors.Is(err, io.EOF) && s.n < s.want:
		return n, fmt.Errorf("read %s: %w after %d of %d bytes", s.url, io.ErrUnexpectedEOF, s.n, s.want)
	case errors.Is(err, io.EOF):
		return n, io.EOF
	case err != nil:
		return n, fmt.Errorf("read %s: %w", s.url, err)
	}
	return n, nil
}

func (s *sizedReader) Close() error { return s.r.Close() }
