package main

import (
	"context"
	"fmt"
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
	s.RenderPDF = renderPDF
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

// renderPDF renders an agency's statement PDF.
var renderPDF monthclose.Renderer = pdf.Render
