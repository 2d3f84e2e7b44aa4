package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/reportjob/reportjob/internal/config"
	"github.com/reportjob/reportjob/internal/directory"
	"github.com/reportjob/reportjob/internal/job"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/statement"
	"github.com/reportjob/reportjob/internal/statement/pdf"
)

// statementsConfig wires statements.* into the job; b is the sink, whose
// S3 client (if any) reads an s3:// directory.
func statementsConfig(cfg *config.Config, b *bucket) job.Statements {
	s := job.Statements{Loc: cfg.Statements.Location, CloseAfter: cfg.Statements.CloseAfter,
		Formats: monthclose.ParseFormats(cfg.Statements.AgencyFiles)}
	s.RenderPDF = pdfRenderer(statementFonts(cfg))
	is := cfg.Statements.Issuer
	s.Docs = monthclose.Documents{
		Issuer:           statement.Party{LegalName: is.LegalName, Address: is.Address, TaxID: is.TaxID, Contact: is.Contact},
		PaymentTermsDays: is.PaymentTermsDays, PaymentInstructions: is.PaymentInstructions, NumberPrefix: is.NumberPrefix,
	}
	if src := cfg.Statements.Directory; src != "" {
		var get directory.Getter
		if b != nil {
			get = b.getObject
		}
		s.Docs.Directory = func(ctx context.Context) (*directory.Directory, error) { return directory.Load(ctx, src, get) }
	}
	if logo := is.Logo; logo != "" {
		s.Docs.Logo = func(context.Context) ([]byte, error) {
			b, err := os.ReadFile(logo)
			if err != nil {
				return nil, fmt.Errorf("statements.issuer.logo: %w", err)
			}
			return b, nil
		}
	}
	return s
}

// renderPDF renders an agency's statement PDF with the embedded fonts only.
var renderPDF monthclose.Renderer = pdf.Render

// pdfRenderer is the statement PDF renderer with the configured fonts
// (statements.fonts; each read once per process). A font the PDF writer
// cannot use (a .ttc collection, CFF outlines) makes every statement PDF
// fail with the error naming the file, so that no statement is published
// with the wrong glyphs.
func pdfRenderer(fonts []string) monthclose.Renderer {
	if len(fonts) == 0 {
		return renderPDF
	}
	r, err := pdf.NewRenderer(fonts)
	if err != nil {
		return func(io.Writer, *statement.Agency) error { return err }
	}
	return r.Render
}

// statementFonts is statements.fonts.
func statementFonts(cfg *config.Config) []string { return cfg.Statements.Fonts }
