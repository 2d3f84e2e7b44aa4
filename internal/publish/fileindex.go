package publish

import (
	"slices"
	"sort"
	"strings"

	"github.com/reportjob/reportjob/internal/report"
)

// fileIndex finds a manifest's objects by key. A manifest's Files are
// sorted by key (Session.Wait sorts them, report.ReadManifest too), so
// the index is the list itself, searched by bisection: no map of 400,000
// keys beside a big period's list. A list not sorted (a manifest written
// by hand) gets a map.
type fileIndex struct {
	files []report.FileInfo // sorted by key; nil when byKey is used
	byKey map[string]int
	all   []report.FileInfo
}

// newFileIndex indexes files, which it keeps (not a copy).
func newFileIndex(files []report.FileInfo) fileIndex {
	if slices.IsSortedFunc(files, func(a, b report.FileInfo) int { return strings.Compare(a.Key, b.Key) }) {
		return fileIndex{files: files}
	}
	m := make(map[string]int, len(files))
	for i, f := range files {
		m[f.Key] = i
	}
	return fileIndex{byKey: m, all: files}
}

// find returns the object of key.
func (x fileIndex) find(key string) (report.FileInfo, bool) {
	if x.byKey != nil {
		i, ok := x.byKey[key]
		if !ok {
			return report.FileInfo{}, false
		}
		return x.all[i], true
	}
	i := sort.Search(len(x.files), func(i int) bool { return x.files[i].Key >= key })
	if i < len(x.files) && x.files[i].Key == key {
		return x.files[i], true
	}
	return report.FileInfo{}, false
}

// has reports whether key is one of the objects.
func (x fileIndex) has(key string) bool {
	_, ok := x.find(key)
	return ok
}
