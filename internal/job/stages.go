package job

import (
	"log/slog"
	"time"
)

// stages times the steps of a period's build, for the DEBUG line
// "period stages": where a slow period's time went, without a profiler.
// The steps overlap in part (uploads run while files are encoded; the
// dedupe feeds the aggregation), so each figure is the wall time from the
// end of the step before.
type stages struct {
	last  time.Time
	attrs []any
}

func newStages() *stages { return &stages{last: time.Now()} }

// done records the wall time since the previous step under key.
func (s *stages) done(key string) {
	now := time.Now()
	s.attrs = append(s.attrs, key, now.Sub(s.last).Milliseconds())
	s.last = now
}

// log writes the DEBUG line.
func (s *stages) log(log *slog.Logger) {
	log.Debug("period stages", s.attrs...)
}
