package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed table must be exactly what the committed XML generates:
// run `go generate ./internal/money` after replacing the XML.
func TestGeneratedTableIsCurrent(t *testing.T) {
	xmlPath := filepath.Join("..", "..", "testdata", "iso4217-list-one.xml")
	data, err := os.ReadFile(xmlPath)
	if err != nil {
		t.Fatal(err)
	}
	got, err := generate(data, "testdata/iso4217-list-one.xml") // the path go:generate passes
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "iso4217.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("internal/money/iso4217.go is not what %s generates; run go generate ./internal/money", xmlPath)
	}
	again, _ := generate(data, "testdata/iso4217-list-one.xml")
	if !bytes.Equal(got, again) {
		t.Error("two runs generated different bytes")
	}
}

func TestParse(t *testing.T) {
	const doc = `<?xml version="1.0" encoding="UTF-8"?>
<ISO_4217 Pblshd="2024-06-25"><CcyTbl>
<CcyNtry><CtryNm>ANTARCTICA</CtryNm><CcyNm>No universal currency</CcyNm></CcyNtry>
<CcyNtry><CtryNm>B</CtryNm><CcyNm>b</CcyNm><Ccy>USD</Ccy><CcyNbr>840</CcyNbr><CcyMnrUnts>2</CcyMnrUnts></CcyNtry>
<CcyNtry><CtryNm>A</CtryNm><CcyNm>a</CcyNm><Ccy>JPY</Ccy><CcyNbr>392</CcyNbr><CcyMnrUnts>0</CcyMnrUnts></CcyNtry>
<CcyNtry><CtryNm>C</CtryNm><CcyNm>c</CcyNm><Ccy>USD</Ccy><CcyNbr>840</CcyNbr><CcyMnrUnts>2</CcyMnrUnts></CcyNtry>
<CcyNtry><CtryNm>ZZ</CtryNm><CcyNm>Gold</CcyNm><Ccy>XAU</Ccy><CcyNbr>959</CcyNbr><CcyMnrUnts>N.A.</CcyMnrUnts></CcyNtry>
</CcyTbl></ISO_4217>`
	published, known, na, err := parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if published != "2024-06-25" || len(known) != 2 || known[0] != (currency{"JPY", 0}) || known[1] != (currency{"USD", 2}) ||
		len(na) != 1 || na[0] != "XAU" {
		t.Errorf("parse = %s %v %v", published, known, na)
	}

	bad := []struct{ name, doc, want string }{
		{"not XML", "<ISO_4217", "parse ISO 4217 XML"},
		{"other root", `<Other Pblshd="2024-06-25"/>`, "parse ISO 4217 XML"},
		{"no date", `<ISO_4217><CcyTbl/></ISO_4217>`, `Pblshd ""`},
		{"empty", `<ISO_4217 Pblshd="2024-06-25"><CcyTbl/></ISO_4217>`, "no currency"},
		{"conflict", `<ISO_4217 Pblshd="2024-06-25"><CcyTbl>
			<CcyNtry><CtryNm>A</CtryNm><Ccy>COP</Ccy><CcyMnrUnts>2</CcyMnrUnts></CcyNtry>
			<CcyNtry><CtryNm>B</CtryNm><Ccy>COP</Ccy><CcyMnrUnts>0</CcyMnrUnts></CcyNtry></CcyTbl></ISO_4217>`,
			`currency COP: listed with minor units "2" and "0"`},
		{"N.A. and digits", `<ISO_4217 Pblshd="2024-06-25"><CcyTbl>
			<CcyNtry><CtryNm>A</CtryNm><Ccy>XDR</Ccy><CcyMnrUnts>N.A.</CcyMnrUnts></CcyNtry>
			<CcyNtry><CtryNm>B</CtryNm><Ccy>XDR</Ccy><CcyMnrUnts>0</CcyMnrUnts></CcyNtry></CcyTbl></ISO_4217>`,
			"listed with minor units"},
		{"lower-case code", `<ISO_4217 Pblshd="2024-06-25"><CcyTbl>
			<CcyNtry><CtryNm>A</CtryNm><Ccy>usd</Ccy><CcyMnrUnts>2</CcyMnrUnts></CcyNtry></CcyTbl></ISO_4217>`,
			`currency code "usd"`},
		{"minor unit word", `<ISO_4217 Pblshd="2024-06-25"><CcyTbl>
			<CcyNtry><CtryNm>A</CtryNm><Ccy>USD</Ccy><CcyMnrUnts>two</CcyMnrUnts></CcyNtry></CcyTbl></ISO_4217>`,
			`minor unit "two"`},
		{"minor unit missing", `<ISO_4217 Pblshd="2024-06-25"><CcyTbl>
			<CcyNtry><CtryNm>A</CtryNm><Ccy>USD</Ccy></CcyNtry></CcyTbl></ISO_4217>`,
			`minor unit ""`},
		{"minor unit 02", `<ISO_4217 Pblshd="2024-06-25"><CcyTbl>
			<CcyNtry><CtryNm>A</CtryNm><Ccy>USD</Ccy><CcyMnrUnts>02</CcyMnrUnts></CcyNtry></CcyTbl></ISO_4217>`,
			`minor unit "02"`},
		{"minor unit without code", `<ISO_4217 Pblshd="2024-06-25"><CcyTbl>
			<CcyNtry><CtryNm>A</CtryNm><CcyMnrUnts>2</CcyMnrUnts></CcyNtry></CcyTbl></ISO_4217>`,
			"without a currency code"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, err := parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
