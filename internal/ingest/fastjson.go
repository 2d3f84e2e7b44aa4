package ingest

import (
	"github.com/reportjob/reportjob/internal/item"
)

// decodePlainLine is decodeLine for the lines producers usually write: one
// flat object of distinct contract fields whose values are strings without
// escapes, numbers or null. It checks that shape strictly (JSON's own
// grammar for those tokens) and builds the attributes with one string
// allocation for all their texts; ok is false for anything else (nesting,
// true/false, escapes, an unknown or repeated field, bad JSON), which
// decodeLine's general path then decodes or refuses, with its messages.
// line is valid UTF-8.
func decodePlainLine(line []byte) (attrs map[string]item.Value, ok bool) {
	type member struct {
		name       string
		start, end int // value text in line (string contents, or the number)
		kind       byte
	}
	var (
		members [item.NumContractAttrs]member
		n       int
		seen    uint16
	)
	p := skipSpace(line, 0)
	if p >= len(line) || line[p] != '{' {
		return nil, false
	}
	p = skipSpace(line, p+1)
	if p < len(line) && line[p] == '}' {
		p++
	} else {
		for {
			ks, ke, next, ok := plainString(line, p)
			if !ok {
				return nil, false
			}
			name, idx := contractField(line[ks:ke])
			if idx < 0 || seen&(1<<idx) != 0 || n == len(members) {
				return nil, false
			}
			seen |= 1 << idx
			p = skipSpace(line, next)
			if p >= len(line) || line[p] != ':' {
				return nil, false
			}
			p = skipSpace(line, p+1)
			if p >= len(line) {
				return nil, false
			}
			m := member{name: name}
			switch c := line[p]; {
			case c == '"':
				if m.start, m.end, p, ok = plainString(line, p); !ok {
					return nil, false
				}
				m.kind = '"'
			case c == 'n':
				if len(line)-p < 4 || string(line[p:p+4]) != "null" {
					return nil, false
				}
				p += 4
				m.kind = 'n'
			case c == '-' || '0' <= c && c <= '9':
				m.start = p
				if p, ok = plainNumber(line, p); !ok {
					return nil, false
				}
				m.end, m.kind = p, '0'
			default:
				return nil, false
			}
			members[n] = m
			n++
			p = skipSpace(line, p)
			if p >= len(line) {
				return nil, false
			}
			if line[p] == '}' {
				p++
				break
			}
			if line[p] != ',' {
				return nil, false
			}
			p = skipSpace(line, p+1)
		}
	}
	if skipSpace(line, p) != len(line) {
		return nil, false
	}
	all := string(line) // the texts are substrings of this one copy
	attrs = make(map[string]item.Value, n)
	for _, m := range members[:n] {
		switch m.kind {
		case 'n': // null: absent
		case '"':
			if numericFields[m.name] {
				attrs[m.name] = item.N(all[m.start:m.end])
			} else {
				attrs[m.name] = item.S(all[m.start:m.end])
			}
		default:
			attrs[m.name] = item.N(all[m.start:m.end])
		}
	}
	return attrs, true
}

// skipSpace returns the position of the first byte at or after p that is
// not JSON whitespace.
func skipSpace(b []byte, p int) int {
	for p < len(b) && (b[p] == ' ' || b[p] == '\t' || b[p] == '\n' || b[p] == '\r') {
		p++
	}
	return p
}

// plainString reads a JSON string without escapes at p: its contents
// [start, end) and the position after the closing quote. Control
// characters are not allowed in JSON strings; a backslash sends the line
// to the general path.
func plainString(b []byte, p int) (start, end, next int, ok bool) {
	if p >= len(b) || b[p] != '"' {
		return 0, 0, 0, false
	}
	for i := p + 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return p + 1, i, i + 1, true
		case c == '\\' || c < 0x20:
			return 0, 0, 0, false
		}
	}
	return 0, 0, 0, false
}

// plainNumber reads a JSON number at p and returns the position after it:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func plainNumber(b []byte, p int) (int, bool) {
	digits := func(p int) int {
		for p < len(b) && '0' <= b[p] && b[p] <= '9' {
			p++
		}
		return p
	}
	if p < len(b) && b[p] == '-' {
		p++
	}
	switch {
	case p < len(b) && b[p] == '0':
		p++
	case p < len(b) && '1' <= b[p] && b[p] <= '9':
		p = digits(p)
	default:
		return 0, false
	}
	if p < len(b) && b[p] == '.' {
		q := digits(p + 1)
		if q == p+1 {
			return 0, false
		}
		p = q
	}
	if p < len(b) && (b[p] == 'e' || b[p] == 'E') {
		p++
		if p < len(b) && (b[p] == '+' || b[p] == '-') {
			p++
		}
		q := digits(p)
		if q == p {
			return 0, false
		}
		p = q
	}
	return p, true
}

// contractField returns the contract attribute named b and its position
// in item.ContractAttrs, or -1.
func contractField(b []byte) (string, int) {
	for i, name := range item.ContractAttrs {
		if string(b) == name {
			return name, i
		}
	}
	return "", -1
}
