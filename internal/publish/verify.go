package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
)

// Kinds of Problem.
const (
	ProblemMissing  = "missing object"  // listed by the manifest, not in the sink
	ProblemCorrupt  = "corrupt object"  // listed, but its size or SHA-256 differs
	ProblemUnlisted = "unlisted object" // in the period's prefixes, not listed
	ProblemPending  = "interrupted publication"
)

// Problem is one difference between a period's manifest and its objects.
type Problem struct {
	Kind   string `json:"kind"`
	Key    string `json:"key"`
	Detail string `json:"detail,omitempty"`
}

func (p Problem) String() string {
	if p.Detail == "" {
		return p.Kind + " " + p.Key
	}
	return p.Kind + " " + p.Key + " (" + p.Detail + ")"
}

// CheckObjects compares the objects of cur's period with its manifest:
// every listed object exists with its size and SHA-256 (each is read
// whole), and no other object remains under the period's dataset prefixes
// and the agency folders named by the manifest, by the keys it replaced,
// and by pending intents, nor a manifest part it does not name.
// cur.Manifest must not be nil.
func (pb *Publisher) CheckObjects(ctx context.Context, cur *Current) ([]Problem, error) {
	m, p := cur.Manifest, cur.Period
	var out []Problem
	for _, f := range m.Files {
		pr, err := pb.checkObject(ctx, f)
		if err != nil {
			return nil, err
		}
		if pr != nil {
			out = append(out, *pr)
		}
	}
	keep := newFileIndex(m.Files)
	prefixes := make([]string, 0, len(report.Datasets))
	for _, d := range report.Datasets {
		prefixes = append(prefixes, report.DatasetPrefix(d, p))
	}
	for _, key := range append(m.Keys(), m.ReplacedFiles...) {
		if esc, ok := report.AgencySegment(key); ok {
			prefixes = append(prefixes, report.EscapedAgencyPrefix(esc, p))
		}
	}
	for _, key := range cur.Intents {
		out = append(out, Problem{Kind: ProblemPending, Key: key})
		in, err := pb.readIntent(ctx, key)
		if err != nil {
			return nil, err
		}
		for _, esc := range in.Agencies {
			prefixes = append(prefixes, report.EscapedAgencyPrefix(esc, p))
		}
	}
	slices.Sort(prefixes)
	for _, prefix := range slices.Compact(prefixes) {
		objs, err := pb.Bucket.List(ctx, prefix)
		if err != nil {
			return nil, fmt.Errorf("verify %s: %w", p.Name(), err)
		}
		for _, o := range objs {
			if !keep.has(o.Key) {
				out = append(out, Problem{Kind: ProblemUnlisted, Key: o.Key})
			}
		}
	}
	// The manifest's own parts were checked when it was read.
	strays, err := pb.strayParts(ctx, p, m)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", p.Name(), err)
	}
	for _, key := range strays {
		out = append(out, Problem{Kind: ProblemUnlisted, Key: key})
	}
	return out, nil
}

func (pb *Publisher) checkObject(ctx context.Context, f report.FileInfo) (*Problem, error) {
	r, _, err := pb.Bucket.Get(ctx, f.Key)
	if errors.Is(err, sink.ErrNotFound) {
		return &Problem{Kind: ProblemMissing, Key: f.Key}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		// A body that fails its checksum on the way is corrupt too.
		return &Problem{Kind: ProblemCorrupt, Key: f.Key, Detail: err.Error()}, nil
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != f.Bytes || sum != f.SHA256 {
		return &Problem{Kind: ProblemCorrupt, Key: f.Key,
			Detail: fmt.Sprintf("%d bytes, sha256 %.16s..., want %d bytes, %.16s...", n, sum, f.Bytes, f.SHA256)}, nil
	}
	return nil, nil
}

// RemoveUnlisted deletes the unlisted objects and intents of problems
// (verify --repair), fenced.
func (pb *Publisher) RemoveUnlisted(ctx context.Context, p report.Period, problems []Problem) error {
	var keys []string
	for _, pr := range problems {
		if pr.Kind == ProblemUnlisted || pr.Kind == ProblemPending {
			keys = append(keys, pr.Key)
		}
	}
	return pb.deleteAll(ctx, p, keys, false)
}
