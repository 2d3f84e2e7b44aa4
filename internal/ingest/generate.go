package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/reportjob/reportjob/internal/money"
)

// DefaultAgencies is the number of agencies GenerateRecords spreads
// traffic over when GenerateOptions.Agencies is 0.
const DefaultAgencies = 300

// GenerateOptions configure the synthetic generator.
type GenerateOptions struct {
	// N is the number of transactions.
	N int
	// Agencies is the number of distinct agencies (default DefaultAgencies).
	Agencies int
	// Seed makes the records: the same options give the same records.
	Seed int64
	// From and To bound recorded_at: [From, To), To after From.
	From, To time.Time
	// Shards and BatchSize are as in Options.
	Shards    int
	BatchSize int
	// Stop, when closed, ends Generate at the next record: what was
	// generated is written, and it returns ErrStopped.
	Stop <-chan struct{}
}

// ErrStopped is returned by Generate and ReadJSONL when their Stop was
// closed: the records generated or read before it are written, no other.
var ErrStopped = errors.New("ingest: stopped")

// Generate writes g.N synthetic transactions (GenerateRecords) through w.
// It writes whatever window it is told, late or not: the caller chooses
// it. Every generated record is validated like an ingested one; a record
// that fails is a bug and an error.
func Generate(ctx context.Context, w Writer, g GenerateOptions) (Stats, error) {
	var stats Stats
	b := newBatcher(w, g.BatchSize, &stats, slog.New(slog.DiscardHandler))
	err := GenerateRecords(g, func(r Record) error {
		select {
		case <-g.Stop:
			return ErrStopped
		default:
		}
		stats.Read++
		tx, err := transaction(r.attrs(), r.RecordedAt, g.Shards)
		if err != nil {
			return fmt.Errorf("generated transaction %s: %w", r.TransactionID, err)
		}
		return b.add(ctx, tx.Item(), stats.Read)
	})
	switch {
	case err == nil:
		err = b.finish(ctx, stats.Read)
	case errors.Is(err, ErrStopped):
		if ferr := b.finish(ctx, stats.Read); ferr != nil {
			err = ferr
		}
	default:
		b.wait()
	}
	return stats, err
}

// awkwardAgencies are real-world agency ids the sink key escaping, CSV
// neutralisation and Parquet strings must handle; they replace the
// generic ids at awkwardRanks (popularity ranks, 0 = busiest).
var awkwardAgencies = []string{
	"Agence Étoile",
	"acme/travel",
	"100% Voyages & Co.",
	"=HYPERLINK(\"http://x\")",
	"東京トラベル",
	"o'brien+sons ..",
}

var awkwardRanks = []int{3, 9, 27, 58, 121, 242}

// currencyShare is one currency of the generated traffic: its share (per
// mille) and its amount range in minor units, lo .. about lo*2^(span/1024)
// (span 6700: a range of about 1:100).
type currencyShare struct {
	code    string
	permill int
	lo      int64 // minor units
	span    int64 // log2(hi/lo) in 1/1024ths
	pretty  bool  // prices often end in .99 / .00
	cur     money.Currency
}

// currencyMix is the generated traffic per currency.
var currencyMix = func() []currencyShare {
	mix := []currencyShare{
		{code: "USD", permill: 700, lo: 500, span: 6700, pretty: true}, // 5.00 .. 500.00
		{code: "EUR", permill: 150, lo: 500, span: 6700, pretty: true}, // 5.00 .. 500.00
		{code: "GBP", permill: 80, lo: 400, span: 6700, pretty: true},  // 4.00 .. 400.00
		{code: "JPY", permill: 50, lo: 500, span: 6700},                // 500 .. 50000 yen
		{code: "BHD", permill: 20, lo: 2000, span: 6700},               // 2.000 .. 200.000 dinar
	}
	for i := range mix {
		c, err := money.LookupCurrency(mix[i].code)
		if err != nil {
			panic(err) // a fixed, known code
		}
		mix[i].cur = c
	}
	return mix
}()

// Shares of generated records, per mille.
const (
	refundPermill = 50  // ~5% refunds
	ownBPSPermill = 100 // ~10% carry their own commission_bps
)

// GenerateRecords calls fn with g.N synthetic transactions, in order of
// recorded_at, and returns fn's first error. It is deterministic: the same
// options give the same records (PCG seeded with g.Seed).
//
// Traffic: g.Agencies agencies "agency-0001"... (with a few awkward real
// world ids among them, such as "Agence Étoile" and "acme/travel"),
// Zipf-distributed so a few agencies carry most transactions; USD 70%,
// EUR 15%, GBP 8%, JPY 5% (whole yen), BHD 2% (3 digits), amounts
// log-normal-ish in a realistic range per currency; ~5% refunds; ~10%
// with their own commission_bps in 500..2500; every record has a
// customer_id and a product_id. Transaction ids are "tx-<seed>-<n>".
// recorded_at is spread evenly over [From, To), in milliseconds.
func GenerateRecords(g GenerateOptions, fn func(Record) error) error {
	if g.N < 0 {
		return fmt.Errorf("generate: N %d is negative", g.N)
	}
	if !g.To.After(g.From) {
		return fmt.Errorf("generate: window [%s, %s) is empty", g.From.Format(time.RFC3339), g.To.Format(time.RFC3339))
	}
	if g.Agencies < 0 {
		return fmt.Errorf("generate: agencies %d is negative", g.Agencies)
	}
	nAgencies := g.Agencies
	if nAgencies == 0 {
		nAgencies = DefaultAgencies
	}
	agencies := AgencyIDs(nAgencies)
	rng := rand.New(rand.NewPCG(uint64(g.Seed), 0x5deece66d))
	var zipf *rand.Zipf
	if nAgencies > 1 {
		zipf = rand.NewZipf(rng, 1.1, 1, uint64(nAgencies-1))
	}
	from := g.From.UTC()
	span := g.To.Sub(g.From)
	step := span / time.Duration(max(g.N, 1))
	for i := range g.N {
		r := Record{TransactionID: fmt.Sprintf("tx-%d-%d", g.Seed, i+1)}
		if zipf != nil {
			r.AgencyID = agencies[zipf.Uint64()]
		} else {
			r.AgencyID = agencies[0]
		}
		c := pickCurrency(rng)
		r.Currency = c.code
		r.Amount = amountText(rng, c)
		if rng.IntN(1000) < refundPermill {
			r.Kind = "refund"
		} else {
			r.Kind = "purchase"
		}
		if rng.IntN(1000) < ownBPSPermill {
			bps := 500 + 25*rng.IntN(81) // 500 .. 2500 in steps of 25
			r.CommissionBPS = &bps
		}
		r.CustomerID = fmt.Sprintf("cust-%06d", rng.IntN(200_000)+1)
		r.ProductID = fmt.Sprintf("prod-%04d", rng.IntN(5_000)+1)
		r.RecordedAt = recordedInstant(rng, from, span, step, i)
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// recordedInstant returns the i-th record's time: a random instant in the
// i-th of N equal slices of the window (or anywhere in it when slices are
// shorter than a nanosecond), truncated to the millisecond, never before
// from.
func recordedInstant(rng *rand.Rand, from time.Time, span, step time.Duration, i int) time.Time {
	var off time.Duration
	if step > 0 {
		off = step*time.Duration(i) + time.Duration(rng.Int64N(int64(step)))
	} else {
		off = time.Duration(rng.Int64N(int64(span)))
	}
	t := from.Add(off)
	if tt := t.Truncate(time.Millisecond); !tt.Before(from) {
		t = tt
	}
	return t
}

// AgencyIDs returns the ids of the n agencies Generate draws from, in rank
// order: agency-0001 ... with the awkward real-world ids at their ranks.
func AgencyIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("agency-%04d", i+1)
	}
	for j, rank := range awkwardRanks {
		if rank < n {
			ids[rank] = awkwardAgencies[j]
		}
	}
	return ids
}

func pickCurrency(rng *rand.Rand) currencyShare {
	x := rng.IntN(1000)
	for _, c := range currencyMix {
		if x < c.permill {
			return c
		}
		x -= c.permill
	}
	return currencyMix[0]
}

// amountText returns a random amount of c as exact decimal text. It uses
// integers only (so every platform draws the same amounts): the log2 of
// amount/lo is the mean of three uniform draws in [0, span] (bell-shaped),
// and 2^x is approximated piecewise linearly.
func amountText(rng *rand.Rand, c currencyShare) string {
	x := (rng.Int64N(c.span+1) + rng.Int64N(c.span+1) + rng.Int64N(c.span+1)) / 3
	minor := (c.lo << (x >> 10)) * (1024 + x&1023) >> 10
	if c.pretty {
		switch rng.IntN(10) {
		case 0, 1, 2: // x.99
			minor = minor/100*100 + 99
		case 3, 4: // x.00
			minor = max(minor/100*100, 100)
		}
	}
	return c.cur.Format(minor)
}
