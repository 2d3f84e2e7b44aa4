package main

import (
	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/monthclose"
)

// statementsConfig wires statements.* into the job.
func statementsConfig(cfg *config.Config) job.Statements {
	s := job.Statements{Loc: cfg.Statements.Location, CloseAfter: cfg.Statements.CloseAfter}
	for _, f := range cfg.Statements.AgencyFiles {
		switch f {
		case "pdf":
			s.Formats.PDF = true
		case "csv":
			s.Formats.CSV = true
		case "parquet":
			s.Formats.Parquet = true
		}
	}
	s.RenderPDF = renderPDF
	return s
}

// renderPDF renders an agency's statement PDF; nil until package
// statement/pdf lands.
var renderPDF monthclose.Renderer
