package report

import (
	"fmt"
	"strings"
)

// CheckKey returns nil if key is a valid Sink key, else an error wrapping
// ErrBadKey that names the key. A valid key is relative, '/'-separated,
// made only of the bytes [A-Za-z0-9._=%/-], and has no empty, "." or ".."
// segment (so no leading, trailing or doubled '/'). Every Sink calls it.
func CheckKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrBadKey)
	}
	if i := badByte(key); i >= 0 {
		return fmt.Errorf("%w %q: byte %#02x at offset %d is outside [A-Za-z0-9._=%%/-]", ErrBadKey, key, key[i], i)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if err := checkSegment(key, seg); err != nil {
			return err
		}
	}
	return nil
}

// CheckPrefix returns nil if prefix is a valid argument to Sink.List, else
// an error wrapping ErrBadKey. A prefix is "" or the start of a valid key:
// the same bytes as a key, and every complete segment (every one before a
// '/') valid; the last, partial segment may be empty or anything.
func CheckPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if i := badByte(prefix); i >= 0 {
		return fmt.Errorf("%w: prefix %q: byte %#02x at offset %d is outside [A-Za-z0-9._=%%/-]", ErrBadKey, prefix, prefix[i], i)
	}
	segs := strings.Split(prefix, "/")
	for _, seg := range segs[:len(segs)-1] {
		if err := checkSegment(prefix, seg); err != nil {
			return fmt.Errorf("prefix: %w", err)
		}
	}
	return nil
}

func checkSegment(key, seg string) error {
	switch seg {
	case "":
		return fmt.Errorf("%w %q: empty segment (leading, trailing or doubled '/')", ErrBadKey, key)
	case ".", "..":
		return fmt.Errorf("%w %q: segment %q", ErrBadKey, key, seg)
	}
	return nil
}

// badByte returns the offset of the first byte of s outside
// [A-Za-z0-9._=%/-], or -1.
func badByte(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == '=', c == '%', c == '/', c == '-':
		default:
			return i
		}
	}
	return -1
}
