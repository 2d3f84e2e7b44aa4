package main

import (
	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/statement/pdf"
)

// statementsConfig wires statements.* into the job.
func statementsConfig(cfg *config.Config) job.Statements {
	s := job.Statements{Loc: cfg.Statements.Location, CloseAfter: cfg.Statements.CloseAfter,
		Formats: monthclose.ParseFormats(cfg.Statements.AgencyFiles)}
	s.RenderPDF = renderPDF
	return s
}

// renderPDF renders an agency's statement PDF.
var renderPDF monthclose.Renderer = pdf.Render
