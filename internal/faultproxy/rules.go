package faultproxy

import mrand "math/rand/v2"

// Always returns a rule that answers f to each request match accepts.
func Always(f Fault, match func(*Request) bool) Rule {
	return func(r *Request) Fault {
		if match(r) {
			return f
		}
		return Fault{}
	}
}

// Once returns a rule that answers f to the first request match accepts,
// and passes every other.
func Once(f Fault, match func(*Request) bool) Rule {
	done := false
	return func(r *Request) Fault {
		if !done && match(r) {
			done = true
			return f
		}
		return Fault{}
	}
}

// Transient returns a rule that answers one of faults (each as likely) to
// each request match accepts (every request when match is nil) with
// probability prob, drawing from a generator seeded with seed, but never
// more than maxInRow times in a row to one request and its retries (same
// Request.ID): a client that makes more attempts than maxInRow always gets
// through.
func Transient(seed uint64, prob float64, maxInRow int, match func(*Request) bool, faults ...Fault) Rule {
	return TransientBy(func(r *Request) string { return r.ID }, seed, prob, maxInRow, match, faults...)
}

// TransientBy is Transient with the requests grouped by key instead of
// Request.ID: e.g. by operation for a batch call whose retry carries only
// what was left unprocessed (a new body each time).
func TransientBy(key func(*Request) string, seed uint64, prob float64, maxInRow int, match func(*Request) bool, faults ...Fault) Rule {
	rng := mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	inRow := map[string]int{}
	return func(r *Request) Fault {
		if match != nil && !match(r) {
			return Fault{}
		}
		k := key(r)
		if inRow[k] < maxInRow && rng.Float64() < prob {
			inRow[k]++
			return faults[rng.IntN(len(faults))]
		}
		delete(inRow, k)
		return Fault{}
	}
}

// Ops returns a match function accepting the operations named.
func Ops(ops ...string) func(*Request) bool {
	return func(r *Request) bool {
		for _, op := range ops {
			if r.Op == op {
				return true
			}
		}
		return false
	}
}

// Nth returns a rule that answers f to the nth request match accepts (from
// 1), and passes every other (the SDK's retry of it included).
func Nth(n int, f Fault, match func(*Request) bool) Rule {
	seen := 0
	return func(r *Request) Fault {
		if !match(r) {
			return Fault{}
		}
		seen++
		if seen == n {
			return f
		}
		return Fault{}
	}
}

// First returns a rule that asks rules in turn and answers the first
// fault (the rules after it are not asked for that request).
func First(rules ...Rule) Rule {
	return func(r *Request) Fault {
		for _, rl := range rules {
			if f := rl(r); f.Kind != Pass {
				return f
			}
		}
		return Fault{}
	}
}
