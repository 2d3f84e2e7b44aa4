package collect

import (
	"errors"
	"iter"
	"slices"
	"testing"
)

func seqOf(ids []string, err error) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for _, id := range ids {
			if !yield(id, nil) {
				return
			}
		}
		if err != nil {
			yield("", err)
		}
	}
}

func TestMergeIDs(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		seqs    [][]string
		err     error
		want    []string
		wantErr bool
	}{
		{name: "none", want: nil},
		{name: "one", seqs: [][]string{{"a", "b"}}, want: []string{"a", "b"}},
		{name: "overlap", seqs: [][]string{{"a", "c", "e"}, {"b", "c", "f"}, {}, {"a"}}, want: []string{"a", "b", "c", "e", "f"}},
		{name: "unordered", seqs: [][]string{{"b", "a"}}, want: []string{"b"}, wantErr: true},
		{name: "error", seqs: [][]string{{"a", "b"}}, err: boom, want: []string{"a", "b"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var seqs []iter.Seq2[string, error]
			for i, ids := range tc.seqs {
				var err error
				if i == 0 {
					err = tc.err
				}
				seqs = append(seqs, seqOf(ids, err))
			}
			var got []string
			var gotErr error
			for id, err := range MergeIDs(seqs...) {
				if err != nil {
					gotErr = err
					break
				}
				got = append(got, id)
			}
			if (gotErr != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
				t.Errorf("MergeIDs = %q, %v; want %q (error %v)", got, gotErr, tc.want, tc.wantErr)
			}
		})
	}
}
