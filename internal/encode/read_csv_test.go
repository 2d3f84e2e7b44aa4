package encode

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/report"
)

// byAgency splits rows, sorted by agency, into one slice per agency (an
// agency's file holds its rows only).
func byAgency[T any](rows []T, agency func(T) string) [][]T {
	var out [][]T
	for i, r := range rows {
		if i == 0 || agency(r) != agency(rows[i-1]) {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], r)
	}
	return out
}

// TestReadCSVRoundTrip: an agency's summary and adjustments CSVs read back
// to the rows they were written from, exactly: every currency scale,
// negative and 128-bit totals, agency ids a spreadsheet would run as
// formulas (their cells neutralised).
func TestReadCSVRoundTrip(t *testing.T) {
	for _, rows := range byAgency(summaryRows(), func(r report.SummaryRow) string { return r.AgencyID }) {
		got, err := ReadSummaryCSV(bytes.NewReader(summaryCSV(t, rows)), rows[0].AgencyID)
		if err != nil || !reflect.DeepEqual(got, rows) {
			t.Errorf("summary of %q: %v\n got %+v\nwant %+v", rows[0].AgencyID, err, got, rows)
		}
	}
	for _, rows := range byAgency(adjustmentRows(), func(r report.AdjustmentRow) string { return r.AgencyID }) {
		got, err := ReadAdjustmentsCSV(bytes.NewReader(adjustmentsCSV(t, rows)), rows[0].AgencyID)
		if err != nil || !reflect.DeepEqual(got, rows) {
			t.Errorf("adjustments of %q: %v\n got %+v\nwant %+v", rows[0].AgencyID, err, got, rows)
		}
	}
}

// TestReadCSVErrors: a file that is not what it claims is an error, never
// misread.
func TestReadCSVErrors(t *testing.T) {
	rows := summaryRows()[2:6] // agency-1
	good := string(summaryCSV(t, rows))
	adj := string(adjustmentsCSV(t, adjustmentRows()[1:3]))
	tests := []struct {
		name, body, agency string
		adjustments        bool
	}{
		{name: "another agency's file", body: good, agency: "agency-2"},
		{name: "an adjustments file read as a summary", body: adj, agency: "agency-1"},
		{name: "a summary file read as adjustments", body: good, agency: "agency-1", adjustments: true},
		{name: "no header", body: good[strings.Index(good, "\r\n")+2:], agency: "agency-1"},
		{name: "empty", body: "", agency: "agency-1"},
		{name: "an amount with too many digits", body: strings.Replace(good, "59.97", "59.971", 1), agency: "agency-1"},
		{name: "an unknown currency", body: strings.Replace(good, ",JPY,", ",XYZ,", 1), agency: "agency-1"},
		{name: "a bad count", body: strings.Replace(good, ",USD,3,", ",USD,x,", 1), agency: "agency-1"},
		{name: "a bad time", body: strings.Replace(good, "T10:00:00Z", "T10:00:00", 1), agency: "agency-1"},
		{name: "a bad revision", body: strings.Replace(adj, ",3\r\n", ",x\r\n", 1), agency: "agency-1", adjustments: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.adjustments {
				_, err = ReadAdjustmentsCSV(strings.NewReader(tt.body), tt.agency)
			} else {
				_, err = ReadSummaryCSV(strings.NewReader(tt.body), tt.agency)
			}
			if err == nil {
				t.Error("read without an error")
			}
		})
	}
}
