package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/duckdb"
	"github.com/reportjob/reportjob/internal/dynamodb"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/testenv"
)

// TestE2EEmbedded runs the whole job through the CLI on the embedded
// default: bbolt file and local folder.
func TestE2EEmbedded(t *testing.T) {
	h := newHarness(t, harnessOptions{top: e2eCommissionYAML})
	e2e(t, h, h.putRawEmbedded)
}

// TestE2EAWS runs the same job on DynamoDB Local and versitygw over HTTPS,
// with 8 write shards; the raw producer writes unsharded keys with the
// plain SDK, as seed 001's Rails app does.
func TestE2EAWS(t *testing.T) {
	h := newHarness(t, harnessOptions{backend: "aws", shards: 8, top: e2eCommissionYAML})
	e2e(t, h, h.putRawDynamoDB)
}

// TestE2EDynalite runs the same job on dynalite, a DynamoDB implementation
// without Time to Live (init warns and goes on), with 8 write shards.
func TestE2EDynalite(t *testing.T) {
	h := newHarness(t, harnessOptions{backend: "aws", shards: 8, dynamodb: testenv.EnvDynalite, top: e2eCommissionYAML})
	e2e(t, h, h.putRawDynamoDB)
}

func e2e(t *testing.T, h *harness, putRaw func([]rawItem)) {
	now := e2eNow.Format(time.RFC3339)
	h.mustRun(0, "init")
	h.mustRun(0, "init") // safe to run twice

	body, txs := fixtureJSONL(t, 3000)
	file := h.writeFile("tx.jsonl", body)
	// Without --allow-late, records older than report.lateness are refused.
	_, errs, code := h.run("ingest", "--file", file, "--now", now)
	if code != exitFailed || !strings.Contains(errs, "allow-late") {
		t.Fatalf("ingest of late records: exit %d, want %d naming --allow-late; stderr:\n%s", code, exitFailed, errs)
	}
	sum := h.mustRun(0, "ingest", "--file", file, "--now", now, "--allow-late")
	if sum["written"] != float64(len(txs)) {
		t.Fatalf("ingest summary %v: want %d written", sum, len(txs))
	}
	// A retried ingest of the same file writes the same items, not new ones.
	h.mustRun(0, "ingest", "--file", file, "--now", now, "--allow-late")

	raws := rawItems()
	putRaw(raws)
	for _, r := range raws {
		if r.billed != nil {
			txs = append(txs, *r.billed)
		}
	}

	sum = h.mustRun(0, "run", "--now", now)
	if sum["status"] != "ok" || sum["periods_processed"] != float64(3) || sum["checkpoint"] != "2024-03-01T03:00:00Z" {
		t.Fatalf("run summary: %v", sum)
	}
	st := h.mustRun(0, "status", "--json", "--now", now)
	if st["checkpoint"] != "2024-03-01T03:00:00Z" || st["periods_behind"] != float64(0) || st["rechecks_owed"] != float64(1) {
		t.Fatalf("status after run: %v", st)
	}

	want := expected(t, txs, e2eStart.Add(3*time.Hour))
	objs := h.objects()
	checkSummaries(t, h, objs, want)
	checkAgencyCSVs(t, h, objs, want)
	checkLineItems(t, h, objs, txs)
	checkManifests(t, h, objs, raws)
	checkKeys(t, h, objs)

	// Nothing more is due: a second run does nothing.
	if sum := h.mustRun(0, "run", "--now", now); sum["status"] != "nothing_due" {
		t.Fatalf("second run: %v", sum)
	}
	// Backfill rebuilds the same objects, byte for byte, writes nothing,
	// and never moves the checkpoint.
	sum = h.mustRun(0, "run", "--backfill", "--from", "2024-03-01", "--to", "2024-03-01T03:00:00Z", "--now", now)
	if sum["objects_written"] != float64(0) || sum["restated"] != float64(0) {
		t.Fatalf("backfill of unchanged periods: %v", sum)
	}
	if again := h.objects(); !mapsEqual(again, objs) {
		t.Fatalf("backfill changed the sink: %d objects, want %d", len(again), len(objs))
	}
	if st := h.mustRun(0, "status", "--json", "--now", now); st["checkpoint"] != "2024-03-01T03:00:00Z" {
		t.Fatalf("backfill moved the checkpoint: %v", st)
	}
	// verify finds every delivered period as its manifest says.
	v := h.mustRun(0, "verify", "--from", "2024-03-01", "--to", "2024-03-01T03:00:00Z", "--now", now)
	if v["status"] != "ok" || v["ok"] != float64(3) {
		t.Fatalf("verify: %v", v)
	}
	checkDuckDB(t, h, objs, want)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// datasetKeys returns the keys of objs under dataset/, sorted, but the
// monthly statements' (stIsMonthKey: checked by stCheckObjects).
func datasetKeys(objs map[string]string, dataset string) []string {
	var out []string
	for k := range objs {
		if strings.HasPrefix(k, dataset+"/") && !stIsMonthKey(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func checkSummaries(t *testing.T, h *harness, objs map[string]string, want map[refKey]*refRow) {
	t.Helper()
	sk := h.sink()
	got := map[refKey]summaryRec{}
	files := datasetKeys(objs, "summary")
	if len(files) != 3 {
		t.Errorf("summary files %q, want one per period", files)
	}
	for _, key := range files {
		rows := readParquet[summaryRec](t, key, h.read(sk, key))
		for i, r := range rows {
			if !r.PeriodEnd.Equal(r.PeriodStart.Add(time.Hour)) || !strings.Contains(key, "period="+r.PeriodStart.UTC().Format("20060102T1504Z")+"/") {
				t.Errorf("%s: row of period %s..%s", key, r.PeriodStart, r.PeriodEnd)
			}
			if i > 0 && (rows[i-1].AgencyID > r.AgencyID || rows[i-1].AgencyID == r.AgencyID && rows[i-1].Currency >= r.Currency) {
				t.Errorf("%s: rows not sorted by (agency_id, currency) at %d", key, i)
			}
			got[refKey{r.PeriodStart.UTC(), r.AgencyID, r.Currency}] = r
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d summary rows, want %d", len(got), len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("no summary row for %v", k)
			continue
		}
		if g.PurchaseCount != w.purchases || g.RefundCount != w.refunds || dec38(g.Gross).Cmp(w.gross) != 0 ||
			dec38(g.Refunds).Cmp(w.refundAmt) != 0 || dec38(g.Net).Cmp(w.net) != 0 || dec38(g.Commission).Cmp(w.commission) != 0 {
			t.Errorf("%v: got gross %s net %s commission %s\nwant %s", k, dec38(g.Gross), dec38(g.Net), dec38(g.Commission), w)
		}
	}
	// Spot checks written by hand (DECIMAL(38,4) unscaled): t1+t2+t3+t5 and
	// raw-1 for acme USD in the first period: commission 2.00 + 0.00 +
	// 0.02 - 0.50 + 0.25 = 1.77.
	if g := got[refKey{e2eStart, "acme", "USD"}]; dec38(g.Commission).Int64() != 17700 || dec38(g.Gross).Int64() != 226900 || dec38(g.Net).Int64() != 176900 {
		t.Errorf("acme USD first period: %+v, want commission 1.77, gross 22.69, net 17.69", g)
	}
	if g := got[refKey{e2eStart, "beta", "BHD"}]; dec38(g.Commission).Int64() != 250 {
		t.Errorf("beta BHD first period commission %s, want 0.025 (25.125 fils rounds to 25)", dec38(g.Commission))
	}
	// COP and IQD keep their fractions (ISO 4217, not CLDR).
	if g := got[refKey{e2eStart.Add(time.Hour), "andes", "IQD"}]; dec38(g.Gross).Int64() != 9064140 {
		t.Errorf("andes IQD gross %s, want 906.4140", dec38(g.Gross))
	}
	// The whale's total is past 10^18 minor units of CLF.
	if g := got[refKey{e2eStart.Add(time.Hour), "whale", "CLF"}]; dec38(g.Gross).String() != "1999999999999999998" {
		t.Errorf("whale CLF gross %s, want 1999999999999999998 (199999999999999.9998)", dec38(g.Gross))
	}
}

// checkAgencyCSVs checks each agency's summary CSV, the file handed to the
// agency, against the reference to the minor unit.
func checkAgencyCSVs(t *testing.T, h *harness, objs map[string]string, want map[refKey]*refRow) {
	t.Helper()
	sk := h.sink()
	seen := 0
	for key := range objs {
		if !strings.HasPrefix(key, "agencies/") || !strings.Contains(key, "/summary-") || !strings.HasSuffix(key, ".csv") {
			continue
		}
		recs, err := csv.NewReader(bytes.NewReader(h.read(sk, key))).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		for _, r := range recs[1:] {
			start, _ := time.Parse(time.RFC3339, r[0])
			agency := strings.TrimPrefix(r[2], "'") // neutralised formula
			w := want[refKey{start, agency, r[3]}]
			if w == nil {
				t.Errorf("%s: unexpected row %q", key, r)
				continue
			}
			seen++
			d := refDigits[r[3]]
			if r[6] != decimalN(w.gross, d) || r[8] != decimalN(w.net, d) || r[9] != decimalN(w.commission, d) {
				t.Errorf("%s: %q, want gross %s net %s commission %s", key, r, decimalN(w.gross, d), decimalN(w.net, d), decimalN(w.commission, d))
			}
		}
	}
	if seen != len(want) {
		t.Errorf("agency CSVs hold %d rows, want %d", seen, len(want))
	}
}

// decimalN renders an unscaled DECIMAL(x,4) in the currency's digits.
func decimalN(v *big.Int, digits int) string {
	return new(big.Rat).SetFrac(v, big.NewInt(10000)).FloatString(digits)
}

func checkLineItems(t *testing.T, h *harness, objs map[string]string, txs []fxTx) {
	t.Helper()
	sk := h.sink()
	seen := map[string]int{}
	for _, key := range datasetKeys(objs, "transactions") {
		rows := readParquet[lineRec](t, key, h.read(sk, key))
		for i, r := range rows {
			seen[r.TransactionID]++
			if i > 0 {
				p := rows[i-1]
				if p.AgencyID > r.AgencyID || p.AgencyID == r.AgencyID && (p.Currency > r.Currency || p.Currency == r.Currency && p.SortKey > r.SortKey) {
					t.Errorf("%s: rows not sorted by (agency_id, currency, sort_key) at %d", key, i)
				}
			}
			if (r.Kind == "refund") != (r.Commission < 0) && r.Commission != 0 {
				t.Errorf("%s: %s kind %s commission %d", key, r.TransactionID, r.Kind, r.Commission)
			}
		}
	}
	due := 0
	for _, tx := range txs {
		if tx.at.Before(e2eStart.Add(3 * time.Hour)) {
			due++
			if seen[tx.id] != 1 {
				t.Errorf("transaction %s in %d line-item rows, want 1", tx.id, seen[tx.id])
			}
		}
	}
	if len(seen) != due {
		t.Errorf("%d transactions in line items, want %d", len(seen), due)
	}
}

func checkManifests(t *testing.T, h *harness, objs map[string]string, raws []rawItem) {
	t.Helper()
	sk := h.sink()
	var rejects, dups int64
	listed := map[string]bool{}
	for _, key := range periodManifestKeys(objs) {
		m, err := report.ParseManifest(h.read(sk, key))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if key != report.ManifestKey(m.Period()) || m.Revision != 1 || m.ItemsFingerprint == "" {
			t.Errorf("%s: period %s revision %d fingerprint %q", key, m.Period(), m.Revision, m.ItemsFingerprint)
		}
		rejects += m.Rejects
		dups += m.DuplicatesWithinPeriod + m.DuplicatesAcrossPeriods
		for _, f := range m.Files {
			listed[f.Key] = true
			if objs[f.Key] != f.SHA256 {
				t.Errorf("%s lists %s with sha256 %s; the object's is %s", key, f.Key, f.SHA256, objs[f.Key])
			}
			if !strings.Contains(f.Key, "/period="+m.Period().Name()+"/") {
				t.Errorf("%s lists %s of another period", key, f.Key)
			}
		}
		if m.ItemsRead != m.Transactions+m.DuplicatesWithinPeriod+m.DuplicatesAcrossPeriods+m.Rejects {
			t.Errorf("%s: items_read %d != transactions %d + duplicates %d + %d + rejects %d", key, m.ItemsRead,
				m.Transactions, m.DuplicatesWithinPeriod, m.DuplicatesAcrossPeriods, m.Rejects)
		}
	}
	checkListed(t, h, objs)
	wantRejects := 0
	reasons := map[string]int{}
	for _, r := range raws {
		if r.reject != "" {
			wantRejects++
			reasons[r.reject]++
		}
	}
	if rejects != int64(wantRejects) || dups != 1 {
		t.Errorf("manifests: %d rejects, %d duplicates; want %d and 1", rejects, dups, wantRejects)
	}
	got := map[string]int{}
	for _, key := range datasetKeys(objs, "rejects") {
		sc := bufio.NewScanner(bytes.NewReader(h.read(sk, key)))
		for sc.Scan() {
			var r collect.Reject
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if r.Reason == "" || r.PartitionKey == "" || r.SortKey == "" {
				t.Errorf("%s: reject without keys or reason: %s", key, sc.Text())
			}
			got[r.Field]++
		}
	}
	for f, n := range reasons {
		if got[f] != n {
			t.Errorf("rejects naming field %q: %d, want %d (all: %v)", f, got[f], n, got)
		}
	}
}

// checkListed checks the sink's invariant after a completed run: every
// period object is a manifest, or is listed, with its SHA-256, by the
// manifest of its period; no intent is left; the statements' objects are
// listed by their month's manifest, no month intent or due marker is left
// (statementProblems).
func checkListed(t *testing.T, h *harness, objs map[string]string) {
	t.Helper()
	listed := map[string]string{}
	for _, key := range datasetKeys(objs, "manifests") {
		if report.IsStatementKey(key) {
			continue
		}
		if !strings.HasSuffix(key, "/manifest.json") {
			t.Errorf("unexpected %s", key)
			continue
		}
		m, err := report.ParseManifest(h.read(h.sink(), key))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		for _, f := range m.Files {
			listed[f.Key] = f.SHA256
		}
	}
	for k, sha := range objs {
		switch {
		case strings.HasPrefix(k, "manifests/"), report.IsStatementKey(k):
		case listed[k] == "":
			t.Errorf("object %s is listed by no manifest", k)
		case listed[k] != sha:
			t.Errorf("object %s has sha256 %s, its manifest says %s", k, sha, listed[k])
		}
	}
	for k := range listed {
		if _, ok := objs[k]; !ok {
			t.Errorf("listed object %s is missing", k)
		}
	}
	sk := h.sink()
	months := readStatements(t, objs, func(key string) []byte { return h.read(sk, key) })
	for _, p := range statementProblems(objs, months, true) {
		t.Error(p)
	}
	if len(months) == 0 {
		t.Errorf("no month manifest: the run published no statements")
	}
}

func checkKeys(t *testing.T, h *harness, objs map[string]string) {
	t.Helper()
	p0 := "/period=20240301T0000Z/"
	for _, prefix := range []string{
		"agencies/agency=..%2Fx" + p0 + "summary-",
		"agencies/agency=a%2Fb" + p0 + "summary-",
		"agencies/agency=%25" + p0 + "transactions-",
		"agencies/agency=Agence%20%C3%89toile" + p0 + "summary-",
		"agencies/agency=" + keys.EscapeAgency(longID) + p0 + "summary-",
		"rejects" + p0 + "rejects-",
		"summary" + p0 + "summary-",
		"transactions/period=20240301T0200Z/transactions-",
		"manifests/period=20240301T0200Z/manifest.json",
	} {
		found := false
		for k := range objs {
			found = found || strings.HasPrefix(k, prefix)
		}
		if !found {
			t.Errorf("no object %s...", prefix)
		}
	}
	for k := range objs {
		if strings.Contains(k, "period=20240301T0300Z") {
			t.Errorf("%s written: that period is not due", k)
		}
	}
	if h.backend == "embedded" {
		// Nothing outside the sink folder.
		entries, _ := os.ReadDir(h.dir)
		for _, e := range entries {
			switch e.Name() {
			case "reports", "data", "config.yaml", "tx.jsonl":
			default:
				t.Errorf("unexpected %s in the test folder", e.Name())
			}
		}
	}
	// CSV neutralises the formula-like agency id.
	var csvKey string
	for k := range objs {
		if strings.HasPrefix(k, "agencies/agency="+keys.EscapeAgency("=cmd|' /C calc'!A0")+p0+"summary-") {
			csvKey = k
		}
	}
	if csv := string(h.read(h.sink(), csvKey)); !strings.Contains(csv, "'=cmd") {
		t.Errorf("formula agency id not neutralised in CSV:\n%s", csv)
	}
}

// checkDuckDB reads the summary and transactions datasets of the last
// period with DuckDB, an independent Parquet reader: column types and sums
// to the minor unit.
func checkDuckDB(t *testing.T, h *harness, objs map[string]string, want map[refKey]*refRow) {
	t.Helper()
	testenv.Require(t, testenv.EnvDuckDB, "DuckDB (npm @duckdb/node-api)")
	dir := t.TempDir()
	sk := h.sink()
	var summaries, lines []string
	for _, k := range append(datasetKeys(objs, "summary"), datasetKeys(objs, "transactions")...) {
		name := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, h.read(sk, k), 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(k, "summary/") {
			summaries = append(summaries, name)
		} else {
			lines = append(lines, name)
		}
	}
	types := duckdb.Describe(t, summaries[0])
	for col, typ := range map[string]string{"period_start": "TIMESTAMP WITH TIME ZONE", "agency_id": "VARCHAR",
		"purchase_count": "BIGINT", "commission_amount": "DECIMAL(38,4)", "gross_amount": "DECIMAL(38,4)"} {
		if types[col] != typ {
			t.Errorf("DuckDB sees %s as %s, want %s", col, types[col], typ)
		}
	}
	lt := duckdb.Describe(t, lines[0])
	for col, typ := range map[string]string{"recorded_at": "TIMESTAMP WITH TIME ZONE", "amount": "DECIMAL(18,4)", "commission_bps": "INTEGER"} {
		if lt[col] != typ {
			t.Errorf("DuckDB sees transactions %s as %s, want %s", col, lt[col], typ)
		}
	}
	rows := duckdb.Query(t, "SELECT currency, CAST(SUM(commission_amount) AS VARCHAR) AS c, CAST(SUM(net_amount) AS VARCHAR) AS n FROM read_parquet("+
		duckdb.Literal(filepath.Join(dir, "summary", "*", "*.parquet"))+") GROUP BY currency ORDER BY currency")
	ref := map[string][2]*big.Int{}
	for k, r := range want {
		a := ref[k.cur]
		if a[0] == nil {
			a = [2]*big.Int{new(big.Int), new(big.Int)}
		}
		a[0].Add(a[0], r.commission)
		a[1].Add(a[1], r.net)
		ref[k.cur] = a
	}
	if len(rows) != len(ref) {
		t.Fatalf("DuckDB: %d currencies, want %d: %v", len(rows), len(ref), rows)
	}
	for _, r := range rows {
		w := ref[r["currency"]]
		if r["c"] != decimal4(w[0]) || r["n"] != decimal4(w[1]) {
			t.Errorf("DuckDB %s: commission %s net %s, want %s and %s", r["currency"], r["c"], r["n"], decimal4(w[0]), decimal4(w[1]))
		}
	}
}

// decimal4 renders an unscaled DECIMAL(x,4) as DuckDB prints it.
func decimal4(v *big.Int) string {
	return new(big.Rat).SetFrac(v, big.NewInt(10000)).FloatString(4)
}

func (h *harness) putRawEmbedded(raws []rawItem) {
	h.withStore(func(st *store) {
		items := make([]item.Item, len(raws))
		for i, r := range raws {
			items[i] = item.Item{PK: r.pk, SK: r.sk, Attrs: r.attrs}
		}
		if err := st.PutItems(context.Background(), items); err != nil {
			h.t.Fatal(err)
		}
	})
}

// putRawDynamoDB writes with the plain SDK, PutItem by PutItem, not through
// our store: the keys as a Rails producer computes them.
func (h *harness) putRawDynamoDB(raws []rawItem) {
	ctx := context.Background()
	cfg := h.cli().cfg
	client, err := dynamodb.NewClient(ctx, dynamodb.ClientConfig{Region: "us-east-1", Endpoint: cfg.Store.DynamoDB.Endpoint})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, r := range raws {
		av := map[string]types.AttributeValue{
			cfg.Keys.PartitionAttr: &types.AttributeValueMemberS{Value: r.pk},
			cfg.Keys.SortAttr:      &types.AttributeValueMemberS{Value: r.sk},
		}
		for name, v := range r.attrs {
			if v.Type == item.Number {
				av[name] = &types.AttributeValueMemberN{Value: v.Text}
			} else {
				av[name] = &types.AttributeValueMemberS{Value: v.Text}
			}
		}
		if _, err := client.PutItem(ctx, &awsddb.PutItemInput{TableName: aws.String(cfg.Store.DynamoDB.Table), Item: av}); err != nil {
			h.t.Fatal(err)
		}
	}
}
