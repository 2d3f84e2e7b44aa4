package sink

import (
	"fmt"
	"strings"
)

// CheckKey returns nil if key is a valid object key, else an error
// wrapping ErrBadKey that names the key. A valid key is relative,
// '/'-separated, made only of the bytes [A-Za-z0-9._=%/-], and has no
// empty, "." or ".." segment (so no leading, trailing or doubled '/'): no
// key can name a place outside the bucket. It does not know a driver's
// length limits; (*Bucket).CheckKey adds them.
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

// CheckPrefix returns nil if prefix is a valid argument to List, else an
// error wrapping ErrBadKey that names it. A prefix is "" or the start of a
// valid key: the same bytes as a key, and every complete segment (every
// one before a '/') valid; the last, partial segment may be empty or
// anything.
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

// checkLimits returns an error wrapping ErrBadKey when key (already valid)
// is longer than maxKey bytes or has a segment longer than maxSeg bytes;
// where names the store whose limits they are.
func checkLimits(key string, maxKey, maxSeg int, where string) error {
	if len(key) > maxKey {
		return fmt.Errorf("%w %q: %d bytes, more than the %d a key of %s can have", ErrBadKey, key, len(key), maxKey, where)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if len(seg) > maxSeg {
			return fmt.Errorf("%w %q: segment of %d bytes, more than the %d a segment of %s can have", ErrBadKey, key, len(seg), maxSeg, where)
		}
	}
	return nil
}
