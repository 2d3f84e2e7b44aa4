package main

import (
	"bufio"
	"bytes"
	"context"
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

func e2e(t *testing.T, h *harness, putRaw func([]rawItem)) {
	now := e2eNow.Format(time.RFC3339)
	h.mustRun(0, "init")
	h.mustRun(0, "init") // safe to run twice

	body, txs := fixtureJSONL(t, 3000)
	file := h.writeFile("tx.jsonl", body)
	// Without --allow-late, records older than report.lateness are refused.
	_, errs, code := h.run("ingest", "--file", file, "--now", now)
	if code != exitFailed || !strings.Contains(errs, "--allow-late") && !strings.Contains(errs, "allow-late") {
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
	if st["checkpoint"] != "2024-03-01T03:00:00Z" || st["periods_behind"] != float64(0) {
		t.Fatalf("status after run: %v", st)
	}

	want := expected(t, txs, e2eStart.Add(3*time.Hour))
	objs := h.objects()
	checkSummaries(t, h, objs, want)
	checkLineItems(t, h, objs, txs)
	checkManifests(t, h, objs, raws)
	checkKeys(t, h, objs)

	// Nothing more is due: a second run does nothing.
	if sum := h.mustRun(0, "run", "--now", now); sum["status"] != "nothing_due" {
		t.Fatalf("second run: %v", sum)
	}

	// Backfill rewrites the same keys with the same bytes, and never moves
	// the checkpoint.
	h.mustRun(0, "run", "--backfill", "--from", "2024-03-01", "--to", "2024-03-01T03:00:00Z", "--now", now)
	again := h.objects()
	if len(again) != len(objs) {
		t.Fatalf("backfill: %d objects, want %d", len(again), len(objs))
	}
	for k, sha := range objs {
		if strings.HasSuffix(k, "manifest.json") {
			continue
		}
		if again[k] != sha {
			t.Errorf("backfill changed %s", k)
		}
	}
	if st := h.mustRun(0, "status", "--json", "--now", now); st["checkpoint"] != "2024-03-01T03:00:00Z" {
		t.Fatalf("backfill moved the checkpoint: %v", st)
	}
	checkDuckDB(t, h, objs, want)
}

func checkSummaries(t *testing.T, h *harness, objs map[string]string, want map[refKey]*refRow) {
	t.Helper()
	sk := h.sink()
	got := map[refKey]summaryRec{}
	for key := range objs {
		if !strings.HasSuffix(key, "/summary.parquet") {
			continue
		}
		for _, r := range readParquet[summaryRec](t, key, h.read(sk, key)) {
			if !r.PeriodEnd.Equal(r.PeriodStart.Add(time.Hour)) {
				t.Errorf("%s: period %s..%s", key, r.PeriodStart, r.PeriodEnd)
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
		if g.PurchaseCount != w.purchases || g.RefundCount != w.refunds || !eq(g.Gross, w.gross) ||
			!eq(g.Refunds, w.refundAmt) || !eq(g.Net, w.net) || !eq(g.Commission, w.commission) {
			t.Errorf("%v: got %+v\nwant %s", k, g, w)
		}
	}
	// Spot checks written by hand (DECIMAL(18,4) unscaled): t1+t2+t3+t5 and
	// raw-1 for acme USD in the first period: commission 2.00 + 0.00 +
	// 0.02 - 0.50 + 0.25 = 1.77.
	if g := got[refKey{e2eStart, "acme", "USD"}]; g.Commission != 17700 || g.Gross != 226900 || g.Net != 176900 {
		t.Errorf("acme USD first period: %+v, want commission 1.77, gross 22.69, net 17.69", g)
	}
	if g := got[refKey{e2eStart, "beta", "BHD"}]; g.Commission != 250 {
		t.Errorf("beta BHD first period commission %d, want 0.025 (25.125 fils rounds to 25)", g.Commission)
	}
	if g := got[refKey{e2eStart.Add(time.Hour), "beta", "BHD"}]; g.Commission != 3000 {
		t.Errorf("beta BHD second period commission %d, want 0.300 (agency rate 1200)", g.Commission)
	}
}

func eq(got int64, want *big.Int) bool { return want.IsInt64() && want.Int64() == got }

func checkLineItems(t *testing.T, h *harness, objs map[string]string, txs []fxTx) {
	t.Helper()
	sk := h.sink()
	seen := map[string]int{}
	for key := range objs {
		if !strings.HasSuffix(key, "/transactions.parquet") {
			continue
		}
		rows := readParquet[lineRec](t, key, h.read(sk, key))
		for i, r := range rows {
			seen[r.TransactionID]++
			if i > 0 {
				p := rows[i-1]
				if p.Currency > r.Currency || p.Currency == r.Currency && p.SortKey > r.SortKey {
					t.Errorf("%s: rows not sorted by (currency, sort_key) at %d", key, i)
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
	for key := range objs {
		if !strings.HasSuffix(key, "manifest.json") {
			continue
		}
		var m report.Manifest
		if err := json.Unmarshal(h.read(sk, key), &m); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		rejects += m.Rejects
		dups += m.DuplicatesDropped
		prefix := strings.TrimSuffix(key, "manifest.json")
		listed := map[string]bool{}
		for _, f := range m.Files {
			listed[f.Key] = true
			if objs[f.Key] != f.SHA256 {
				t.Errorf("%s lists %s with sha256 %s; the object's is %s", key, f.Key, f.SHA256, objs[f.Key])
			}
		}
		for k := range objs {
			if strings.HasPrefix(k, prefix) && k != key && !listed[k] {
				t.Errorf("%s does not list %s", key, k)
			}
		}
		if m.ItemsRead != m.Transactions+m.DuplicatesDropped+m.Rejects {
			t.Errorf("%s: items_read %d != transactions %d + duplicates %d + rejects %d", key, m.ItemsRead, m.Transactions, m.DuplicatesDropped, m.Rejects)
		}
	}
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
	for key := range objs {
		if !strings.HasSuffix(key, "rejects.jsonl") {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(h.read(sk, key)))
		for sc.Scan() {
			var r report.Reject
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

func checkKeys(t *testing.T, h *harness, objs map[string]string) {
	t.Helper()
	for _, want := range []string{
		"period=20240301T0000Z/agency=..%2Fx/summary.parquet",
		"period=20240301T0000Z/agency=a%2Fb/summary.csv",
		"period=20240301T0000Z/agency=%25/transactions.parquet",
		"period=20240301T0000Z/agency=Agence%20%C3%89toile/summary.parquet",
		"period=20240301T0000Z/agency=" + keys.EscapeAgency(longID) + "/summary.parquet",
		"period=20240301T0000Z/rejects.jsonl",
		"period=20240301T0200Z/manifest.json",
	} {
		if _, ok := objs[want]; !ok {
			t.Errorf("no object %s", want)
		}
	}
	for k := range objs {
		if strings.HasPrefix(k, "period=20240301T0300Z") {
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
	csv := string(h.read(h.sink(), "period=20240301T0000Z/agency="+keys.EscapeAgency("=cmd|' /C calc'!A0")+"/summary.csv"))
	if !strings.Contains(csv, "'=cmd") {
		t.Errorf("formula agency id not neutralised in CSV:\n%s", csv)
	}
}

// checkDuckDB reads one summary and one transactions file with DuckDB, an
// independent Parquet reader: column types and sums.
func checkDuckDB(t *testing.T, h *harness, objs map[string]string, want map[refKey]*refRow) {
	t.Helper()
	testenv.Require(t, testenv.EnvDuckDB, "DuckDB (npm @duckdb/node-api)")
	dir := t.TempDir()
	sk := h.sink()
	var keys []string
	for k := range objs {
		if strings.HasPrefix(k, "period=20240301T0200Z/") && strings.HasSuffix(k, ".parquet") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for i, k := range keys {
		name := filepath.Join(dir, strings.ReplaceAll(k, "/", "_"))
		if err := os.WriteFile(name, h.read(sk, k), 0o644); err != nil {
			t.Fatal(err)
		}
		keys[i] = name
	}
	summary := filepath.Join(dir, "*summary.parquet")
	types := duckdb.Describe(t, keys[len(keys)-2]) // a summary.parquet (sorted: summary before transactions)
	for col, typ := range map[string]string{"period_start": "TIMESTAMP WITH TIME ZONE", "agency_id": "VARCHAR",
		"purchase_count": "BIGINT", "commission_amount": "DECIMAL(18,4)"} {
		if types[col] != typ {
			t.Errorf("DuckDB sees %s as %s, want %s", col, types[col], typ)
		}
	}
	lines := duckdb.Describe(t, keys[len(keys)-1])
	for col, typ := range map[string]string{"recorded_at": "TIMESTAMP WITH TIME ZONE", "amount": "DECIMAL(18,4)", "commission_bps": "INTEGER"} {
		if lines[col] != typ {
			t.Errorf("DuckDB sees transactions %s as %s, want %s", col, lines[col], typ)
		}
	}
	rows := duckdb.Query(t, "SELECT currency, CAST(SUM(commission_amount) AS VARCHAR) AS c, CAST(SUM(net_amount) AS VARCHAR) AS n FROM read_parquet("+
		duckdb.Literal(summary)+") GROUP BY currency ORDER BY currency")
	ref := map[string][2]*big.Int{}
	for k, r := range want {
		if k.period.Equal(e2eStart.Add(2 * time.Hour)) {
			a := ref[k.cur]
			if a[0] == nil {
				a = [2]*big.Int{new(big.Int), new(big.Int)}
			}
			a[0].Add(a[0], r.commission)
			a[1].Add(a[1], r.net)
			ref[k.cur] = a
		}
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
